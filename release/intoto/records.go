package intoto

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	toto "github.com/in-toto/in-toto-golang/in_toto"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/release/descriptor"
)

// Records are the step outputs a link names beside what the release
// itself holds: the qualification reports a crown rests on, by file name,
// and the evidence artifacts they reference, by digest. The release does
// not carry them, so the layout's artifact rules are what bind them: the
// qualify links produce them and the review link consumes the same ones.
type Records map[string]toto.HashObj

// Artifact name prefixes of records.
const (
	prefQualification = "qualification/"
	prefEvidence      = "evidence/"
)

// minQualifications is how many passing reports a crown needs: a
// qualification and its independent reproduction.
const minQualifications = 2

// reportSchemaPrefix names the qualification report documents (the
// version after it may grow).
const reportSchemaPrefix = "cacheon.qualification-report."

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// QualificationRecords reads the qualification reports at paths and
// returns them as records: each report as qualification/<file name> with
// the SHA-256 of its bytes, and every evidence artifact it references
// (an object with a domain and a sha256) as evidence/<sha256>. A crown
// rests on two passing qualifications, the second reproducing the first
// on exchanged lanes, so fewer reports, a report that is not a
// qualification report, one that did not pass, two with one file name or
// two with the same bytes are refused, naming the file, and so is a set in
// which no report reproduces another.
func QualificationRecords(paths []string) (Records, error) {
	if len(paths) < minQualifications {
		return nil, fmt.Errorf("%d qualification report(s) given: a crown rests on %d independent qualifications (a qualification and its reproduction)", len(paths), minQualifications)
	}
	r := Records{}
	seen := map[string]string{}
	// canonical maps each report's canonical digest (what a reproduction
	// names) to its path; reproduces lists the digests reproductions name.
	canonical := map[string]string{}
	var reproduces []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Schema         string `json:"schema"`
			Decision       string `json:"decision"`
			Reproduces     string `json:"reproduces"`
			LanesExchanged bool   `json:"lanes_exchanged"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("qualification report %s: %w", p, err)
		}
		if !strings.HasPrefix(doc.Schema, reportSchemaPrefix) {
			return nil, fmt.Errorf("qualification report %s: schema %q is not a qualification report (%s*)", p, doc.Schema, reportSchemaPrefix)
		}
		if doc.Decision != "PASS" {
			return nil, fmt.Errorf("qualification report %s: decision %q: only passing qualifications crown", p, doc.Decision)
		}
		sum := descriptor.SHA256(data)
		if other, ok := seen[sum]; ok {
			return nil, fmt.Errorf("qualification report %s: the same bytes as %s: one qualification is not two", p, other)
		}
		seen[sum] = p
		name := prefQualification + filepath.Base(p)
		if _, ok := r[name]; ok {
			return nil, fmt.Errorf("qualification report %s: a second report named %s (links name reports by file name)", p, filepath.Base(p))
		}
		r[name] = sha(sum)
		tree, err := canonjson.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("qualification report %s: %w", p, err)
		}
		canon, err := canonjson.Marshal(tree)
		if err != nil {
			return nil, fmt.Errorf("qualification report %s: %w", p, err)
		}
		canonical[descriptor.SHA256(canon)] = p
		if doc.Reproduces != "" && doc.LanesExchanged {
			reproduces = append(reproduces, doc.Reproduces)
		}
		for _, d := range evidenceDigests(tree) {
			r[prefEvidence+d] = sha(d)
		}
	}
	for _, d := range reproduces {
		if _, ok := canonical[d]; ok {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no report among %s reproduces another on exchanged lanes: a crown rests on a qualification and its independent reproduction", strings.Join(paths, ", "))
}

// evidenceDigests returns the sha256 of every evidence reference (an
// object with a "domain" and a 64-hex "sha256") in a parsed report,
// sorted.
func evidenceDigests(v interface{}) []string {
	set := map[string]bool{}
	var walk func(interface{})
	walk = func(v interface{}) {
		switch x := v.(type) {
		case map[string]interface{}:
			d, _ := x["domain"].(string)
			s, _ := x["sha256"].(string)
			if d != "" && hex64.MatchString(s) {
				set[s] = true
			}
			for _, c := range x {
				walk(c)
			}
		case []interface{}:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// isRecord says whether an artifact name is a record (outside the
// release) rather than something the release holds.
func isRecord(name string) bool {
	return strings.HasPrefix(name, prefQualification) || strings.HasPrefix(name, prefEvidence)
}

// split separates a link's artifacts into those the release holds and
// the records.
func split(m map[string]toto.HashObj) (bound map[string]toto.HashObj, records Records) {
	bound, records = map[string]toto.HashObj{}, Records{}
	for n, h := range m {
		if isRecord(n) {
			records[n] = h
		} else {
			bound[n] = h
		}
	}
	return bound, records
}

// reports counts the qualification reports among records.
func (r Records) reports() int {
	n := 0
	for name := range r {
		if strings.HasPrefix(name, prefQualification) {
			n++
		}
	}
	return n
}
