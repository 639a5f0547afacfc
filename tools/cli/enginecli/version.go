package enginecli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"

	"github.com/spf13/cobra"
)

// versionOptions are the flags of version.
type versionOptions struct{ jsonOut bool }

// NewVersionCommand is version, in both command lines: it reports the
// modules of the binary it runs in.
func NewVersionCommand(s Streams) *cobra.Command {
	var o versionOptions
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the Go toolchain, module and build settings of this binary",
		Long: `Print what this binary's embedded Go build information says: the toolchain
that linked it, the main module, every module it links (version and go.sum
hash) and the build settings. It is the same information "go version -m"
reads from the file and vulnerability scanners use, and the release SBOM
lists for the image entrypoint. A binary linked without module information
(an older Bazel build) prints the toolchain only.`,
		Example: `  cacheon version
  cacheon version --json | jq -r '.modules[] | .path + " " + .version'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runVersion(cmd.Context(), s, o) },
	}
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	return cmd
}

type versionModule struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	Sum     string `json:"sum,omitempty"`
}

type versionReport struct {
	FormatVersion int               `json:"format_version"`
	GoVersion     string            `json:"go_version"`
	Path          string            `json:"path"`
	MainModule    string            `json:"main_module"`
	Modules       []versionModule   `json:"modules"`
	Settings      map[string]string `json:"settings"`
}

func runVersion(_ context.Context, s Streams, o versionOptions) error {
	rep := versionReport{FormatVersion: 1, GoVersion: runtime.Version(), Modules: []versionModule{}, Settings: map[string]string{}}
	if info, ok := debug.ReadBuildInfo(); ok {
		rep.Path, rep.MainModule = info.Path, info.Main.Path
		for _, m := range info.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			rep.Modules = append(rep.Modules, versionModule{Path: m.Path, Version: m.Version, Sum: m.Sum})
		}
		for _, st := range info.Settings {
			rep.Settings[st.Key] = st.Value
		}
	}
	if o.jsonOut {
		return WriteJSON(s.Out, rep)
	}
	fmt.Fprintf(s.Out, "cacheon %s\n  go     %s\n  module %s\n", orDash(rep.Path), rep.GoVersion, orDash(rep.MainModule))
	for _, m := range rep.Modules {
		fmt.Fprintf(s.Out, "  dep    %s %s %s\n", m.Path, m.Version, m.Sum)
	}
	keys := make([]string, 0, len(rep.Settings))
	for k := range rep.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(s.Out, "  build  %s=%s\n", k, rep.Settings[k])
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
