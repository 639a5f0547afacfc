package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// docCommand is one cacheon command line found in a document.
type docCommand struct {
	file string
	line int
	text string
}

// documentedCommands returns the cacheon command lines of the Markdown
// code blocks of the repository's documentation, with continuation lines
// joined and shell prompts removed.
func documentedCommands(t *testing.T) []docCommand {
	t.Helper()
	var cmds []docCommand
	for _, doc := range documentationPages(t, false) {
		for _, l := range codeLines(doc.text) {
			if l.command && !strings.HasPrefix(l.text, "#") && strings.Contains(l.text, "cacheon ") {
				cmds = append(cmds, docCommand{file: doc.file, line: l.line, text: l.text})
			}
		}
	}
	return cmds
}

// docPage is one Markdown page: its path relative to the repository root
// and its text.
type docPage struct {
	file string
	text string
}

// documentationPages reads README.md and every page under docs/; with
// generated, the CLI reference under docs/reference/cli too (it is
// generated from the command tree, so its command lines are the tree's).
func documentationPages(t *testing.T, generated bool) []docPage {
	t.Helper()
	root := repoDir(".")
	docs := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "cli" && !generated {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pages []docPage
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		pages = append(pages, docPage{file: filepath.ToSlash(rel), text: string(b)})
	}
	return pages
}

// codeLine is one line of a Markdown code block, continuation lines
// joined: a command (every line of a block but a console block's output)
// or a line a command printed.
type codeLine struct {
	line    int // the first line's number in the page
	text    string
	command bool
}

// codeLines returns the lines of the code blocks of a Markdown page, in
// order, trimmed, with shell prompts removed. In a console block only the
// prompted lines ("$ ") are commands; the rest is their output.
func codeLines(page string) []codeLine {
	var lines []codeLine
	inBlock, console := false, false
	pending, start := "", 0
	for i, line := range strings.Split(page, "\n") {
		if fence := strings.TrimSpace(line); strings.HasPrefix(fence, "```") {
			inBlock = !inBlock
			console = fence == "```console"
			pending = ""
			continue
		}
		if !inBlock {
			continue
		}
		line = strings.TrimSpace(line)
		if pending == "" {
			start = i + 1
			if console && !strings.HasPrefix(line, "$ ") {
				lines = append(lines, codeLine{line: start, text: line})
				continue
			}
		}
		line = strings.TrimPrefix(line, "$ ")
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		lines = append(lines, codeLine{line: start, text: pending + line, command: true})
		pending = ""
	}
	return lines
}

// invocation is one cacheon command among a command line's words: the
// command its leading words name, and the words after them up to the end
// of the shell command (its arguments and flags).
type invocation struct {
	cmd  *cobra.Command
	args []string
}

// cacheonInvocations finds the cacheon commands among a command line's
// words. "cacheon" followed by no subcommand is a word of prose or a path
// inside the image, not an invocation.
func cacheonInvocations(root *cobra.Command, fields []string) []invocation {
	var found []invocation
	for i := 0; i < len(fields); i++ {
		tok := strings.Trim(fields[i], `"'(`)
		if tok != "cacheon" && !strings.HasSuffix(tok, "/cacheon") && tok != "$cacheon" && tok != "${cacheon}" {
			continue
		}
		cmd := root
		j := i + 1
		for ; j < len(fields); j++ {
			next := findSub(cmd, fields[j])
			if next == nil {
				break
			}
			cmd = next
		}
		if cmd == root {
			continue
		}
		end := j
		for end < len(fields) && !isShellWord(fields[end]) {
			end++
		}
		found = append(found, invocation{cmd: cmd, args: fields[j:end]})
		i = end
	}
	return found
}

// checkDocCommand resolves a command line's cacheon invocations in the
// command tree and returns what does not exist: an unknown subcommand
// under a command that only groups others, or an unknown flag.
func checkDocCommand(root *cobra.Command, text string) []string {
	var problems []string
	for _, inv := range cacheonInvocations(root, strings.Fields(text)) {
		cmd := inv.cmd
		if !cmd.Runnable() && len(inv.args) > 0 && !strings.HasPrefix(inv.args[0], "-") {
			problems = append(problems, "no command "+cmd.CommandPath()+" "+inv.args[0])
			continue
		}
		for _, f := range inv.args {
			if !strings.HasPrefix(f, "--") || f == "--" {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
			name = strings.TrimRight(name, `"'),;`)
			if strings.ContainsAny(name, "<>…[]") || name == "" {
				continue
			}
			if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil && name != "help" {
				problems = append(problems, cmd.CommandPath()+" has no flag --"+name)
			}
		}
	}
	return problems
}

func findSub(c *cobra.Command, name string) *cobra.Command {
	for _, s := range c.Commands() {
		if s.Name() == name || s.HasAlias(name) {
			return s
		}
	}
	return nil
}

// isShellWord ends a command: a pipe, redirection, list operator or the
// end of a command substitution.
func isShellWord(f string) bool {
	switch f {
	case "|", "||", "&&", ";", ">", ">>", "2>", "2>&1", "<", "&":
		return true
	}
	return strings.HasPrefix(f, ">") || strings.HasPrefix(f, "2>") || strings.HasSuffix(f, ")") && !strings.Contains(f, "(")
}

// Every cacheon command line in the documentation names a command and
// flags that exist, so a guide cannot drift from the tool it teaches.
func TestDocumentedCommandsExist(t *testing.T) {
	root := NewRootCommand(Streams{})
	cmds := documentedCommands(t)
	if len(cmds) < 50 {
		t.Fatalf("found %d documented cacheon commands; the extractor is broken", len(cmds))
	}
	t.Logf("%d documented cacheon command lines", len(cmds))
	for _, c := range cmds {
		for _, p := range checkDocCommand(root, c.text) {
			t.Errorf("%s:%d: %s\n\t%s", c.file, c.line, p, c.text)
		}
	}
}

func TestCheckDocCommand(t *testing.T) {
	root := NewRootCommand(Streams{})
	tests := []struct {
		text string
		want int
	}{
		{"cacheon release verify --key k.pub out/release", 0},
		{"cacheon release verify --key=k.pub --json out/release | jq .verified", 0},
		{"cacheon release verify --no-such-flag out/release", 1},
		{"cacheon release nosuch --key k", 1},
		{`"$cacheon" release base --lock x.json --out b && cacheon release build --base-layout b`, 0},
		{"bazel-bin/tools/cmd/cacheon/cacheon_/cacheon scan --nope x", 1},
		{"ls /cacheon/bin/cacheon", 0},
		{"cacheon release build … --base-layout base/pytorch --base-digest sha256:<digest>", 0},
	}
	for _, tc := range tests {
		if got := checkDocCommand(root, tc.text); len(got) != tc.want {
			t.Errorf("%q: %v, want %d problems", tc.text, got, tc.want)
		}
	}
}

// Each guide's examples come from one release: every "verified
// NAME@sha256:…" line and every example image reference names the same
// image, and every release key id shown is the same key. (Go module
// hashes, "h1:…=", are not key ids.) An example pasted from another run
// shows placeholders instead of its own digests and key.
func TestGuidesShowOneRelease(t *testing.T) {
	verified := regexp.MustCompile(`(?m)^verified (\S+)@(sha256:[0-9a-f]{64})`)
	ref := regexp.MustCompile(`registry\.example\.com/cacheon/engine@(sha256:[0-9a-f]{64})`)
	keyID := regexp.MustCompile(`(h1:)?\b[A-Za-z0-9+/]{43}=`)
	for _, doc := range []string{"docs/consumer-guide.md", "docs/release-engineer-guide.md"} {
		b, err := os.ReadFile(repoDir(doc))
		if err != nil {
			t.Fatal(err)
		}
		images := map[string]bool{}
		names := map[string]bool{}
		for _, m := range verified.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
			images[m[2]] = true
		}
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			images[m[1]] = true
		}
		keys := map[string]bool{}
		for _, m := range keyID.FindAllStringSubmatch(string(b), -1) {
			if m[1] == "" {
				keys[m[0]] = true
			}
		}
		if len(images) > 1 || len(names) > 1 || len(keys) > 1 {
			t.Errorf("%s shows more than one release: images %v, names %v, key ids %v", doc, sortedSet(images), sortedSet(names), sortedSet(keys))
		}
	}
}

func sortedSet(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
