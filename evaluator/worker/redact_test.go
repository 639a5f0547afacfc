package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRedactor(t *testing.T) {
	t.Parallel()
	r := NewRedactor(map[string]string{
		"/srv/runs/r1":         PlaceRun,
		"/srv/runs/r1/w":       PlaceWork,
		"/opt/venv":            PlaceInterpreter,
		"/tmp":                 PlaceRun, // top level: names nothing, kept
		"relative/not/a/place": PlaceRun,
	})
	long := strings.Repeat("é", MaxErrorField) // 2 bytes a rune
	cases := []struct {
		name, in, want string
	}{
		{"work directory", "File \"/srv/runs/r1/w/kernel.py\", line 3", "File \"<work>/kernel.py\", line 3"},
		{"run directory", "open /srv/runs/r1/bundle/x.py failed", "open <run>/bundle/x.py failed"},
		{"whole path", "cwd=/srv/runs/r1/w", "cwd=<work>"},
		{"a longer name is not the path", "/srv/runs/r10/x and /srv/runs/r1-old", "/srv/runs/r10/x and /srv/runs/r1-old"},
		{"interpreter", "/opt/venv/lib/python3.11/site-packages/torch/nn.py", "<interpreter>/lib/python3.11/site-packages/torch/nn.py"},
		{"home directories", "/home/alice/.ssh/id_rsa and /root/.netrc", "<home>/.ssh/id_rsa and <home>/.netrc"},
		{"top level kept", "/tmp/x and /usr/lib/python3", "/tmp/x and /usr/lib/python3"},
		{"bounded on a rune", long, long[:MaxErrorField-len(" … [cut]")] + " … [cut]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Redact(tc.in)
			if got != tc.want {
				t.Fatalf("Redact(%.80q) = %.120q, want %.120q", tc.in, got, tc.want)
			}
			if len(got) > MaxErrorField {
				t.Fatalf("%d bytes, over %d", len(got), MaxErrorField)
			}
		})
	}
}

// TestRedactErrorsBoundsAResult: every *Error field of a decoded result
// is redacted and bounded, and together they stay under MaxErrorTotal.
func TestRedactErrorsBoundsAResult(t *testing.T) {
	t.Parallel()
	big := "/srv/runs/r1/w/k.py: " + strings.Repeat("x", 5000)
	rec := CandidateRecord{Load: &LoadStatus{Error: big}}
	for i := 0; i < 20; i++ {
		rec.Cases = append(rec.Cases, CandidateCase{Index: i, Phases: []CallRecord{{Phase: "first", Status: "error", Error: big}}})
	}
	NewRedactor(map[string]string{"/srv/runs/r1/w": PlaceWork}).RedactErrors(&rec)
	total := len(rec.Load.Error)
	if !strings.HasPrefix(rec.Load.Error, "<work>/k.py: ") || len(rec.Load.Error) > MaxErrorField {
		t.Fatalf("load error %.60q (%d bytes)", rec.Load.Error, len(rec.Load.Error))
	}
	for _, c := range rec.Cases {
		total += len(c.Phases[0].Error)
		if strings.Contains(c.Phases[0].Error, "/srv/runs") {
			t.Fatalf("case %d keeps a host path", c.Index)
		}
		if c.Phases[0].Status != "error" {
			t.Fatalf("case %d: status changed to %q", c.Index, c.Phases[0].Status)
		}
	}
	if total > MaxErrorTotal {
		t.Fatalf("error texts total %d bytes, over %d", total, MaxErrorTotal)
	}
}

// TestWorkerErrorTextIsRedacted: a worker whose error text names the
// host's paths (its work directory, the run directory, the bundle, a
// home directory) and runs on for pages gets them back as placeholders
// and bounded, from the progress log, the result file and the stderr
// tail alike. Before, all three came back as the worker wrote them.
func TestWorkerErrorTextIsRedacted(t *testing.T) {
	t.Parallel()
	for mode, iso := range isolations(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			run := searchableDir(t)
			iso.Hide = []string{run}
			work, bundleDir, validator := filepath.Join(run, "w"), filepath.Join(run, "bundle"), filepath.Join(run, "validator")
			for _, d := range []string{bundleDir, validator} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			msg := "Traceback: File " + bundleDir + "/kernel.py in " + work + " near /home/alice/secrets and " +
				validator + "/cacheon_worker/candidate.py " + strings.Repeat("padding ", 2000)
			progress, _ := json.Marshal(Progress{Stage: "call", Phase: "first", Error: msg})
			result, _ := json.Marshal(CandidateRecord{Load: &LoadStatus{Error: msg}})
			body := "cat > /dev/null; cat > progress.jsonl <<'EOF'\n" + string(progress) + "\nEOF\n" +
				"cat > result.json <<'EOF'\n" + string(result) + "\nEOF\n" +
				"echo \"RuntimeError at " + work + "/scratch and " + bundleDir + "/kernel.py\" >&2; exit 4"
			out, err := Run(context.Background(), iso, Spec{Python: fakePython(t, body), ValidatorRoot: validator, WorkDir: work,
				ReadOnly: []string{bundleDir}, Request: map[string]string{"protocol": Protocol}, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var rec CandidateRecord
			if err := ReadResult(work, &rec); err != nil {
				t.Fatal(err)
			}
			texts := map[string]string{"progress error": out.Progress.Error, "result error": rec.Load.Error,
				"stderr tail": Tail(work, StderrFile, 2000)}
			for what, text := range texts {
				for _, host := range []string{run, "/home/alice"} {
					if strings.Contains(text, host) {
						t.Errorf("%s keeps the host path %s: %.300s", what, host, text)
					}
				}
				if len(text) > MaxErrorField {
					t.Errorf("%s is %d bytes, over %d", what, len(text), MaxErrorField)
				}
			}
			if want := "File <input>/kernel.py in <work> near <home>/secrets and <validator>/cacheon_worker"; !strings.Contains(out.Progress.Error, want) {
				t.Errorf("progress error %.200q does not say %q", out.Progress.Error, want)
			}
			if want := "RuntimeError at <work>/scratch and <run>/bundle/kernel.py"; texts["stderr tail"] != want {
				t.Errorf("stderr tail %q, want %q", texts["stderr tail"], want)
			}
		})
	}
}
