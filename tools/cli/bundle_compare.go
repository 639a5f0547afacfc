package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/kernels/fingerprint"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// bundleCompareOptions are the flags and arguments of bundle compare.
type bundleCompareOptions struct {
	earlier, later string
	deps           enginecli.BundleDeps
	jsonOut        bool
	catalog        string
	patchers       string
}

func newBundleCompareCommand(s Streams, deps enginecli.BundleDeps) *cobra.Command {
	var o bundleCompareOptions
	cmd := &cobra.Command{
		Use:   "compare EARLIER LATER [--json]",
		Short: "Decide whether a later bundle copies an earlier one",
		Long: `Compare fingerprints both bundles (see bundle fingerprint) and decides
whether LATER copies EARLIER, by the first of three rules that holds:

  payload           the selected payload digests are equal;
  normalized_delta  the normalized delta digests are equal (a copy with
                    comments, docstrings, formatting, file, module or
                    variant names changed);
  containment       every substantial file of each bundle has at least the
                    threshold share of its winnowed fingerprints in the
                    other bundle (reordered functions, small edits).

Which of two proposals is the earlier is the caller's to say: on the
market it is the finalized chain order. The market also compares only
proposals of different hotkeys for the same target; this command compares
whatever it is given. docs/reference/anti-copy.md has the thresholds and
the measurements that chose them.

Exit codes: 0 LATER is not a copy; 2 LATER copies EARLIER (the reason is
printed), or a bundle was rejected; 1 a usage or I/O error.`,
		Example: `  cacheon bundle compare kernels/contributions/rmsnorm_triton ./my-rmsnorm
  cacheon bundle compare --json ./first ./second`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.earlier, o.later, o.deps = args[0], args[1], deps
			return runBundleCompare(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	f.StringVar(&o.catalog, "catalog", "", "target catalog HCL file (default: the built-in catalog)")
	f.StringVar(&o.patchers, "patchers", "", "directory of reviewed rebuild patcher files, over the built-in build_cuda_ext.py")
	return cmd
}

// compareJSON is the --json document of bundle compare.
type compareJSON struct {
	FormatVersion int               `json:"format_version"`
	Copy          bool              `json:"copy"`
	Rule          *string           `json:"rule"`
	Reason        string            `json:"reason"`
	Containment   []compareJSONPair `json:"containment"`
	Earlier       fingerprintJSON   `json:"earlier"`
	Later         fingerprintJSON   `json:"later"`
}

type compareJSONPair struct {
	Side      string `json:"side"`
	Path      string `json:"path"`
	Partner   string `json:"partner"`
	Shared    int    `json:"shared"`
	Total     int    `json:"total"`
	Contained bool   `json:"contained"`
}

func runBundleCompare(_ context.Context, s Streams, o bundleCompareOptions) error {
	earlier, err := fingerprintBundle(o.earlier, o.deps, o.catalog, o.patchers)
	if err != nil {
		return err
	}
	later, err := fingerprintBundle(o.later, o.deps, o.catalog, o.patchers)
	if err != nil {
		return err
	}
	v := fingerprint.Compare(earlier, later)
	if o.jsonOut {
		doc := compareJSON{FormatVersion: 1, Copy: v.Copy, Reason: v.Reason, Containment: []compareJSONPair{},
			Earlier: fingerprintDoc(o.earlier, earlier), Later: fingerprintDoc(o.later, later)}
		if v.Rule != "" {
			doc.Rule = &v.Rule
		}
		for _, p := range v.Pairs {
			doc.Containment = append(doc.Containment, compareJSONPair{Side: p.Side, Path: p.Path, Partner: p.Partner,
				Shared: p.Shared, Total: p.Total, Contained: p.Contained()})
		}
		if err := enginecli.WriteJSON(s.Out, doc); err != nil {
			return err
		}
		if v.Copy {
			return enginecli.AlreadyReported(copyVerdict(o, v))
		}
		return nil
	}
	writeCompareText(s.Out, o, v)
	if v.Copy {
		return copyVerdict(o, v)
	}
	return nil
}

// copyVerdict ends the command with exit 2: the later bundle is a copy.
func copyVerdict(o bundleCompareOptions, v fingerprint.Verdict) error {
	return enginecli.ExitWith(enginecli.ExitRejected, errors.New(o.later+" copies "+o.earlier+": "+v.Reason))
}

func writeCompareText(w io.Writer, o bundleCompareOptions, v fingerprint.Verdict) {
	fmt.Fprintf(w, "earlier: %s\nlater:   %s\n", o.earlier, o.later)
	if v.Copy {
		fmt.Fprintf(w, "verdict: copy (%s)\n", v.Rule)
	} else {
		fmt.Fprintf(w, "verdict: not a copy\n")
	}
	fmt.Fprintf(w, "reason:  %s\n", v.Reason)
	for _, p := range v.Pairs {
		mark := "below threshold"
		if p.Contained() {
			mark = "contained"
		}
		fmt.Fprintf(w, "  %-7s %s in %s: %d/%d fingerprints (%s, threshold %d%%)\n", p.Side, p.Path, p.Partner, p.Shared, p.Total, mark, fingerprint.ThresholdPercent)
	}
}
