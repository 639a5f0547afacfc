package cli

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/qualify"
)

// The calibration files the results pages publish (docs/results, each
// written by qualify calibrate on a GPU) are evidence: the page's figures
// come from them. Each must still be what the command wrote: its digest
// recomputes from its rounds, its pass count is its rounds' PASSes, and a
// round of read sets reports the mean of its sets' speedups. A hand edit
// to a round (a decision, a rate, a set) fails here.
func TestCommittedCalibrationFilesAreWhatCalibrateWrote(t *testing.T) {
	root := repoDir("docs/results")
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var head struct {
			Kind string `json:"kind"`
		}
		// Reports, quality calibrations and other documents are not
		// speed calibrations: only a file of calibrate's kinds is checked.
		if json.Unmarshal(b, &head) == nil && (head.Kind == "calibration" || head.Kind == "resolution") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d calibration files under %s; the results pages publish at least 10", len(files), root)
	}
	for _, p := range files {
		rel, _ := filepath.Rel(root, p)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			doc := calibrationJSON{Calibration: &qualify.Calibration{}}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("not a calibration file: %v", err)
			}
			if len(doc.Rounds) < 2 {
				t.Fatalf("%d rounds; calibrate writes a file of at least 2", len(doc.Rounds))
			}
			if got, err := doc.Calibration.Digest(); err != nil || got != doc.Digest {
				t.Errorf("digest %s recomputes to %s (%v): the file is not what calibrate wrote", doc.Digest, got, err)
			}
			if got := doc.Calibration.Passes(); got != doc.Passes {
				t.Errorf("passes %d, but %d rounds say PASS", doc.Passes, got)
			}
			for i, r := range doc.Rounds {
				if len(r.SetSpeedups) == 0 {
					continue
				}
				if len(r.SetSpeedups) != doc.Sets || (len(r.SetsKept) > 0 && len(r.SetsKept) != doc.Sets) {
					t.Errorf("rounds[%d]: %d set speedups and %d kept flags in a calibration of %d sets", i, len(r.SetSpeedups), len(r.SetsKept), doc.Sets)
					continue
				}
				sets := make([]float64, len(r.SetSpeedups))
				for k, x := range r.SetSpeedups {
					sets[k] = parseRate(t, x)
				}
				got := parseRate(t, r.Speedup)
				if len(r.SetsKept) > 0 {
					if want := keptMean(sets, r.SetsKept); math.Abs(got-want) > 1e-12 {
						t.Errorf("rounds[%d]: speedup %s, the mean of its kept sets is %.17g", i, r.Speedup, want)
					}
					continue
				}
				// A file written before sets_kept was recorded: the
				// speedup is the mean of every set, or of all but the one
				// a grade dropped (a grade that drops two is NO_DECISION
				// and still reports a mean of the rest).
				if !someMeanIs(sets, got) {
					t.Errorf("rounds[%d]: speedup %s is the mean of neither all its sets nor all but one", i, r.Speedup)
				}
			}
		})
	}
}

// keptMean is the mean of the kept sets' speedups, or of every set's when
// none was kept (as the grade records it).
func keptMean(sets []float64, kept []bool) float64 {
	var sum, all float64
	n := 0
	for k, x := range sets {
		all += x
		if kept[k] {
			sum, n = sum+x, n+1
		}
	}
	if n == 0 {
		return all / float64(len(sets))
	}
	return sum / float64(n)
}

// someMeanIs is whether x is the mean of every set or of all but one.
func someMeanIs(sets []float64, x float64) bool {
	var sum float64
	for _, s := range sets {
		sum += s
	}
	n := float64(len(sets))
	if math.Abs(sum/n-x) <= 1e-12 {
		return true
	}
	for _, s := range sets {
		if math.Abs((sum-s)/(n-1)-x) <= 1e-12 {
			return true
		}
	}
	return false
}

func parseRate(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		t.Fatalf("%q is not a finite number", s)
	}
	return x
}
