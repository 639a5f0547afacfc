package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var updateReference = flag.Bool("update", false, "rewrite docs/reference/cli from the command tree")

const (
	referenceDir        = "../../docs/reference/cli"
	regenerateReference = "go test ./tools/cli -run TestCLIReferenceIsCurrent -update"
)

// renderReference renders one Markdown page per command of the tree, as
// crane's generated docs do: the help a user gets from --help, with links
// between parent and children. It reads only the command tree, so a page
// changes exactly when a command's help or flags do.
func renderReference(root *cobra.Command) map[string][]byte {
	pages := map[string][]byte{}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		c.InitDefaultHelpFlag()
		var b bytes.Buffer
		fmt.Fprintf(&b, "# %s\n\n%s\n\n", c.CommandPath(), c.Short)
		fmt.Fprintf(&b, "<!-- Generated from the command tree by: %s -->\n\n", regenerateReference)
		if c.Long != "" {
			fmt.Fprintf(&b, "## Synopsis\n\n```\n%s\n```\n\n", strings.TrimRight(c.Long, "\n"))
		}
		if c.Runnable() {
			fmt.Fprintf(&b, "## Usage\n\n```\n%s\n```\n\n", c.UseLine())
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "## Examples\n\n```\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
		}
		if flags := c.NonInheritedFlags(); flags.HasAvailableFlags() {
			fmt.Fprintf(&b, "## Options\n\n```\n%s```\n\n", flags.FlagUsages())
		}
		var subs []*cobra.Command
		for _, sub := range c.Commands() {
			if !sub.Hidden && sub.Name() != "help" && sub.IsAvailableCommand() {
				subs = append(subs, sub)
			}
		}
		sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
		if c.HasParent() || len(subs) > 0 {
			b.WriteString("## See also\n\n")
			if p := c.Parent(); p != nil {
				fmt.Fprintf(&b, "- [%s](%s): %s\n", p.CommandPath(), pageName(p), p.Short)
			}
			for _, sub := range subs {
				fmt.Fprintf(&b, "- [%s](%s): %s\n", sub.CommandPath(), pageName(sub), sub.Short)
			}
			b.WriteString("\n")
		}
		b.WriteString("Exit codes and `--json` output follow [the command line's contract](../cli-contract.md).\n")
		pages[pageName(c)] = b.Bytes()
		for _, sub := range subs {
			visit(sub)
		}
	}
	visit(root)
	return pages
}

func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// TestCLIReferenceIsCurrent fails when docs/reference/cli differs from the
// pages the command tree renders, naming each stale, missing or extra
// page.
func TestCLIReferenceIsCurrent(t *testing.T) {
	if _, err := os.Stat("../../go.mod"); err != nil {
		t.Skip("the CLI reference check needs the module source tree (absent here, as under Bazel)")
	}
	root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	want := renderReference(root)
	if *updateReference {
		if err := os.RemoveAll(referenceDir); err != nil {
			t.Fatal(err)
		}
		must(t, os.MkdirAll(referenceDir, 0o755))
		for name, page := range want {
			must(t, os.WriteFile(filepath.Join(referenceDir, name), page, 0o644))
		}
		return
	}
	entries, err := os.ReadDir(referenceDir)
	if err != nil {
		t.Fatalf("%v (generate it with: %s)", err, regenerateReference)
	}
	var problems []string
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.Name()] = true
		page, ok := want[e.Name()]
		if !ok {
			problems = append(problems, e.Name()+": no such command")
			continue
		}
		got, err := os.ReadFile(filepath.Join(referenceDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, page) {
			problems = append(problems, e.Name()+": stale")
		}
	}
	for name := range want {
		if !seen[name] {
			problems = append(problems, name+": missing")
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Fatalf("docs/reference/cli is out of date (regenerate it with: %s):\n  %s", regenerateReference, strings.Join(problems, "\n  "))
	}
}
