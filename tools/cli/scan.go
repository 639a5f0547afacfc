package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/scan"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

func printScanReport(w io.Writer, r *scan.Report) {
	fmt.Fprintf(w, "bundle: %s  abi: %s  ops: %d\n", r.BundleID, r.ABIVersion, len(r.Ops))
	for _, op := range r.Ops {
		fmt.Fprintf(w, "  %s [%s] %s: %s\n", op.Slot, op.Variant, op.Source, op.Status)
		for _, f := range op.Findings {
			fmt.Fprintf(w, "      %s\n", f)
		}
	}
	if len(r.TreeFindings) > 0 {
		fmt.Fprintln(w, "[VIOLATIONS] vendored/extra/undeclared files (recursive scan):")
		for _, f := range r.TreeFindings {
			fmt.Fprintf(w, "      %s\n", f)
		}
	}
	if r.Clean {
		fmt.Fprintln(w, "clean: no findings")
		return
	}
	fmt.Fprintf(w, "%d violation(s), %d advisory finding(s)\n", r.Violations, r.Advisories)
}

// scanOptions are the flags and arguments of scan.
type scanOptions struct {
	asJSON bool
	args   []string
}

func newScanCommand(s Streams) *cobra.Command {
	var o scanOptions
	cmd := &cobra.Command{
		Use:   "scan BUNDLE [--json]",
		Short: "Statically scan a kernel bundle for policy violations",
		Long: `Scan the kernel bundle in directory BUNDLE without importing or running any
of it. The manifest is read first; then each op's source is parsed and checked
against the source rules and the Triton compilability heuristic, and every
other file in the tree is checked against the tree rules (Python files there
get the source rules too).

Source rules: banned import roots (subprocess, socket, ctypes, pickle,
importlib, ...), bare calls of eval/exec/compile/__import__/open/input/
breakpoint/globals/vars/locals, getattr/setattr/delattr with a name that is
not a string literal, subscripts of __builtins__/__globals__/__dict__,
process and loader attributes (.system, .popen, .fork, .exec*, .spawn*,
.kill, .dlopen, .CDLL, .Popen, .urlopen, ...), .load/.loads on pickle-like
modules (tl.load is fine), dunder introspection (__globals__, __class__,
__subclasses__, ...), plus rules that close aliasing bypasses. A file that
does not parse as Python 3.11 (the worker's interpreter) is a violation.

Tree rules: no symbolic links or special files; no compiled objects
(.so .o .a .dylib .bin .pyc); .cu/.cuh and .patch/.diff files must be
declared in the manifest; anything else must be benign metadata
(manifest.toml, rebuild.json, .gitignore, README*, LICENSE*, metadata/*.json).

Each op reports "clean", "VIOLATIONS", or "BROKEN KERNEL" when the only
finding is the advisory compilability heuristic (triton.next_power_of_2
inside an @jit kernel). Findings print as file:line:col: rule: message.

Exit codes: 0 clean, 2 any finding (advisories included) or a rejected
bundle (invalid manifest, metadata or rebuild.json, an intake limit or name
rule broken), 1 no manifest to read, an I/O or a usage error.`,
		Example: `  cacheon scan kernels/contributions/silu_and_mul_triton
  cacheon scan ./my-bundle --json | jq '.ops[].status'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runScan(cmd.Context(), s, o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	return cmd
}

func runScan(_ context.Context, s Streams, o scanOptions) error {
	dir := o.args[0]
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	report, err := scan.Bundle(dir)
	if err != nil {
		return fmt.Errorf("scan %s: %w", dir, err)
	}
	if o.asJSON {
		if err := enginecli.WriteJSON(s.Out, report); err != nil {
			return err
		}
	} else {
		printScanReport(s.Out, report)
	}
	if !report.Clean {
		return enginecli.AlreadyReported(reject.Errorf("%s: the scan found violations", dir))
	}
	return nil
}
