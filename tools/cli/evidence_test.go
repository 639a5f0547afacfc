package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDefaultEvidenceStore covers the two layouts qualify writes: OUT/report.json
// beside OUT/evidence, and qualify --ledger's OUT/proposal-N/report-K.json
// with one OUT/evidence for every proposal.
func TestDefaultEvidenceStore(t *testing.T) {
	tests := []struct {
		name   string
		dirs   []string
		report string
		want   string
	}{
		{"qualify: beside the report", []string{"out/evidence"}, "out/report.json", "out/evidence"},
		{"qualify --ledger: beside the proposal directory", []string{"out/evidence", "out/proposal-1"}, "out/proposal-1/report-1.json", "out/evidence"},
		{"both exist: beside wins", []string{"out/evidence", "out/proposal-1/evidence"}, "out/proposal-1/report-1.json", "out/proposal-1/evidence"},
		{"neither exists: beside, so the error names it", []string{"out/proposal-1"}, "out/proposal-1/report-1.json", "out/proposal-1/evidence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range tt.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got := defaultEvidenceStore(filepath.Join(root, tt.report))
			if want := filepath.Join(root, tt.want); got != want {
				t.Errorf("store = %s, want %s", got, want)
			}
		})
	}
}
