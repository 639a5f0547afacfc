package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

func newEvidenceCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Re-grade qualification evidence",
		Long: `A qualification keeps its evidence in a content-addressed store (read-only,
single-link files named by their SHA-256; see docs/reference/evidence-store.md)
and names every artifact from its report.`,
	}
	cmd.AddCommand(newEvidenceRegradeCommand(s))
	return cmd
}

// evidenceRegradeOptions are the flags and arguments of evidence regrade.
type evidenceRegradeOptions struct {
	store  string
	json   bool
	report string
}

func newEvidenceRegradeCommand(s Streams) *cobra.Command {
	var o evidenceRegradeOptions
	cmd := &cobra.Command{
		Use:   "regrade REPORT [--evidence DIR] [--json]",
		Short: "Recompute every decision of a qualification report from its evidence",
		Long: `Regrade reads a qualification report, fetches the policy and the raw reads
it names from the evidence store (checking each artifact's size and digest),
grades the reads again with the controller's own code, and recomputes the
aggregate decision over the stages. It needs no GPU.

Exit status: 0 the evidence reproduces every decision; 2 it does not (the
first disagreement is named), or the report or an artifact was refused;
1 a file that cannot be read. The store defaults to the evidence directory
beside REPORT, or, for the reports "qualify --ledger" writes under
OUT/proposal-N/, to OUT/evidence.`,
		Example: `  cacheon evidence regrade qualification/report.json
  cacheon evidence regrade out/proposal-1/report-1.json
  cacheon evidence regrade report.json --evidence /srv/evidence --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.report = args[0]
			return runEvidenceRegrade(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.store, "evidence", "", "evidence store directory (default: evidence/ beside REPORT, else beside its directory)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	return cmd
}

func runEvidenceRegrade(_ context.Context, s Streams, o evidenceRegradeOptions) error {
	_, data, err := readInput(nil, []string{o.report})
	if err != nil {
		return err
	}
	r, err := qualify.ParseReport(data)
	if err != nil {
		return reject.Errorf("%s: %w", o.report, err)
	}
	dir := o.store
	if dir == "" {
		dir = defaultEvidenceStore(o.report)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	store, err := evidence.Open(dir, 0)
	if err != nil {
		return err
	}
	if err := qualify.Regrade(store, r); err != nil {
		return reject.Errorf("%s: %w", o.report, err)
	}
	speedup := ""
	if r.Speed != nil {
		speedup = r.Speed.Speedup
	}
	if o.json {
		return enginecli.WriteJSON(s.Out, map[string]any{"agrees": true, "decision": string(r.Decision), "speedup": speedup, "report": o.report})
	}
	fmt.Fprintf(s.Out, "agrees: %s %s (speedup %s)\n", r.Decision, r.Reason, speedup)
	return nil
}

// defaultEvidenceStore is the store a report names by where it lies:
// "qualify" writes OUT/report.json beside OUT/evidence, and
// "qualify --ledger" writes OUT/proposal-N/report-K.json with one store,
// OUT/evidence, shared by every proposal it qualifies. The directory
// beside the report wins when both exist.
func defaultEvidenceStore(report string) string {
	beside := filepath.Join(filepath.Dir(report), "evidence")
	if _, err := os.Stat(beside); err == nil {
		return beside
	}
	above := filepath.Join(filepath.Dir(filepath.Dir(report)), "evidence")
	if fi, err := os.Stat(above); err == nil && fi.IsDir() {
		return above
	}
	return beside
}
