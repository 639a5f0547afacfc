package review

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/stacks/stack"
)

// ErrCoverage is wrapped when a release stack and its records do not
// match one to one.
var ErrCoverage = errors.New("integration coverage")

// Covered is one release entry with the record that admits it.
type Covered struct {
	TargetID            string
	IntegratedRefDigest identity.Digest
	RecordDigest        string
	Record              *Record
}

// CheckCoverage checks that every entry of the release stack is an
// integrated contribution derived from exactly one of records, and that
// every record covers an entry. It returns the pairs sorted by target.
func CheckCoverage(m *stack.EngineReleaseManifest, records []*Record) ([]Covered, error) {
	byRef := map[identity.Digest][]*Record{}
	recordDigests := map[string]bool{}
	for i, r := range records {
		d, err := r.Digest()
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", ErrCoverage, i, err)
		}
		if recordDigests[d] {
			return nil, fmt.Errorf("%w: record %s (%s) is given twice", ErrCoverage, d, r.TargetID)
		}
		recordDigests[d] = true
		ref, err := r.IntegratedRef()
		if err != nil {
			return nil, fmt.Errorf("%w: record %s (%s): %v", ErrCoverage, d, r.TargetID, err)
		}
		rd, err := ref.RefDigest()
		if err != nil {
			return nil, fmt.Errorf("%w: record %s: %v", ErrCoverage, d, err)
		}
		byRef[rd] = append(byRef[rd], r)
	}
	var out []Covered
	used := map[string]bool{}
	for _, id := range m.TargetIDs() {
		entry := m.Entries[id]
		if entry.RefKind() != stack.IntegratedKind {
			return nil, fmt.Errorf("%w: entry %s is a %s; a release ships integrated contributions only", ErrCoverage, id, entry.RefKind())
		}
		rd, err := entry.RefDigest()
		if err != nil {
			return nil, fmt.Errorf("%w: entry %s: %v", ErrCoverage, id, err)
		}
		recs := byRef[rd]
		switch len(recs) {
		case 0:
			return nil, fmt.Errorf("%w: entry %s (integrated ref %s) has no integration review record deriving it", ErrCoverage, id, rd)
		case 1:
		default:
			return nil, fmt.Errorf("%w: entry %s is covered by %d records; want exactly one", ErrCoverage, id, len(recs))
		}
		d, _ := recs[0].Digest()
		used[d] = true
		out = append(out, Covered{TargetID: id, IntegratedRefDigest: rd, RecordDigest: d, Record: recs[0]})
	}
	var extra []string
	for _, r := range records {
		if d, _ := r.Digest(); !used[d] {
			extra = append(extra, fmt.Sprintf("%s (%s)", d, r.TargetID))
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("%w: record(s) %s cover no entry of the release stack", ErrCoverage, strings.Join(extra, ", "))
	}
	return out, nil
}
