package cli

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
)

// The documentation's prose must not call a command of the command tree
// missing. The heuristic is deliberately simple:
//
//   - The prose is split into units (a paragraph, a list item, a table row,
//     a heading; code blocks are left out), and units into sentences at
//     ".", "!" or "?" followed by a space and a capital, a backtick, "*",
//     "(" or "[", never inside a code span.
//   - A sentence says something is missing when it says "does not exist"
//     (also "do not", "doesn't", "don't"), "not built" or "not yet built",
//     "not implemented" or "not yet implemented", or "none of these
//     exists". A sentence that starts with "None of these", "Neither of
//     these", "These", "They" or "None of them" speaks of the sentence
//     before it, which is then read with it.
//   - "is missing" and "are missing" count only right after a command
//     ("`cacheon settle` is missing"), "there is no" and "there are no"
//     only right before one ("there is no `cacheon settle`").
//   - A command is named by a code span or plain text "cacheon WORD…", or
//     by a code span whose first word is a command `cacheon --help` lists
//     ("`qualify calibrate`", "`settle`"). Its words resolve through the
//     tree up to the first flag, placeholder or argument; a word that is
//     not a subcommand of a command that has subcommands names a command
//     that does not exist ("`cacheon qualify lane`"), which prose may call
//     missing.
//
// So a page that says what is not built names the missing part, not a
// command that exists.

// docSentence is one sentence of a page's prose.
type docSentence struct {
	line int
	text string
}

// codeSpan matches an inline code span.
var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// proseCommand matches "cacheon" and the words after it in plain text.
var proseCommand = regexp.MustCompile(`\bcacheon((?: [a-z][a-z0-9-]*)+)`)

// commandWord is a word that could be a subcommand's name.
var commandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

var (
	saysMissing   = regexp.MustCompile(`(?i)\b(does not|do not|doesn't|don't) exist\b|\bnot (yet )?built\b|\bnot (yet )?implemented\b|\bnone of (these|them) exists?\b`)
	missingAfter  = regexp.MustCompile(`(?i)^\W{0,2}\s*(is|are) (still )?missing\b`)
	noneBefore    = regexp.MustCompile(`(?i)\bthere (is|are) no \W{0,2}$`)
	backReference = regexp.MustCompile(`^(None of these|Neither of these|These|They|None of them)\b`)
)

// proseSentences returns the sentences of a Markdown page outside its code
// blocks, each with the line its unit starts on.
func proseSentences(page string) []docSentence {
	var units []docSentence
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			units = append(units, docSentence{line: start, text: strings.Join(cur, " ")})
		}
		cur = nil
	}
	inBlock := false
	for i, raw := range strings.Split(page, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "```") {
			flush()
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		if line == "" || startsUnit(line) {
			flush()
		}
		if line == "" {
			continue
		}
		if len(cur) == 0 {
			start = i + 1
		}
		cur = append(cur, line)
	}
	flush()
	var sentences []docSentence
	for _, u := range units {
		var prev string
		for _, s := range splitSentences(u.text) {
			text := s
			if backReference.MatchString(s) && prev != "" {
				text = prev + " " + s
			}
			sentences = append(sentences, docSentence{line: u.line, text: text})
			prev = s
		}
	}
	return sentences
}

// startsUnit reports whether a line starts a unit of its own: a heading,
// a table row, a list item or a quotation.
func startsUnit(line string) bool {
	for _, p := range []string{"#", "|", "- ", "* ", "+ ", ">"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	digits := strings.TrimLeftFunc(line, unicode.IsDigit)
	return len(digits) < len(line) && (strings.HasPrefix(digits, ". ") || strings.HasPrefix(digits, ") "))
}

// splitSentences splits a unit's text at sentence ends outside code spans.
func splitSentences(text string) []string {
	var out []string
	r := []rune(text)
	inCode := false
	from := 0
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == '`':
			inCode = !inCode
		case !inCode && (r[i] == '.' || r[i] == '!' || r[i] == '?') && i+2 < len(r) && r[i+1] == ' ':
			if n := r[i+2]; unicode.IsUpper(n) || strings.ContainsRune("`*([", n) {
				out = append(out, strings.TrimSpace(string(r[from:i+1])))
				from = i + 2
			}
		}
	}
	if s := strings.TrimSpace(string(r[from:])); s != "" {
		out = append(out, s)
	}
	return out
}

// mention is a command a sentence names, where it does.
type mention struct {
	start, end int
	cmd        *cobra.Command
}

// commandMentions returns the existing commands a sentence names.
func commandMentions(root *cobra.Command, s string) []mention {
	var out []mention
	for _, m := range codeSpan.FindAllStringSubmatchIndex(s, -1) {
		fields := strings.Fields(s[m[2]:m[3]])
		if len(fields) == 0 {
			continue
		}
		words := fields
		if first := strings.Trim(fields[0], `"'$(){}`); first == "cacheon" || strings.HasSuffix(first, "/cacheon") {
			words = fields[1:]
		} else if c := findSub(root, fields[0]); c == nil || c.Name() == "help" {
			continue
		}
		if c := resolveWords(root, words); c != nil {
			out = append(out, mention{m[0], m[1], c})
		}
	}
	plain := codeSpan.ReplaceAllStringFunc(s, func(c string) string { return strings.Repeat(" ", len(c)) })
	for _, m := range proseCommand.FindAllStringSubmatchIndex(plain, -1) {
		if c := resolveWords(root, strings.Fields(plain[m[2]:m[3]])); c != nil {
			out = append(out, mention{m[0], m[1], c})
		}
	}
	return out
}

// resolveWords resolves the words after "cacheon" to a command; nil when
// they name none, or name a subcommand that does not exist.
func resolveWords(root *cobra.Command, words []string) *cobra.Command {
	cmd := root
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			break
		}
		next := findSub(cmd, w)
		if next == nil {
			if len(cmd.Commands()) > 0 && commandWord.MatchString(w) {
				return nil // no such subcommand
			}
			break
		}
		cmd = next
	}
	if cmd == root {
		return nil
	}
	return cmd
}

// missingClaims returns what a page's prose calls missing among the
// existing commands.
func missingClaims(root *cobra.Command, page string) []string {
	var out []string
	for _, s := range proseSentences(page) {
		mentions := commandMentions(root, s.text)
		if len(mentions) == 0 {
			continue
		}
		wide := saysMissing.MatchString(s.text)
		for _, m := range mentions {
			if wide || missingAfter.MatchString(s.text[m.end:]) || noneBefore.MatchString(s.text[:m.start]) {
				out = append(out, lineRef(s.line)+"calls "+m.cmd.CommandPath()+" missing: "+s.text)
				break
			}
		}
	}
	return out
}

func lineRef(n int) string { return strconv.Itoa(n) + ": " }

// markdownPages is documentationPages with the generated CLI reference and
// the READMEs under kernels/ (the example bundles' and the fixtures').
func markdownPages(t *testing.T) []docPage {
	t.Helper()
	pages := documentationPages(t, true)
	root := repoDir(".")
	err := filepath.WalkDir(filepath.Join(root, "kernels"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			pages = append(pages, docPage{file: filepath.ToSlash(rel), text: string(b)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// No page says a command that exists is not built.
func TestDocsDoNotCallCommandsMissing(t *testing.T) {
	root := NewRootCommand(Streams{})
	pages := markdownPages(t)
	if len(pages) < 40 {
		t.Fatalf("found %d Markdown pages; the walk is broken", len(pages))
	}
	for _, p := range pages {
		for _, c := range missingClaims(root, p.text) {
			t.Errorf("%s:%s", p.file, c)
		}
	}
}

func TestDocMissingClaims(t *testing.T) {
	root := NewRootCommand(Streams{})
	tests := []struct {
		text string
		want int
	}{
		// The sentences the documentation used to say.
		{"There is no `cacheon settle`: no crown is produced from qualifications.", 1},
		{"| settlement, crowns, the ledger (`cacheon settle`) | **not built** |", 1},
		{"The product design also has an evaluator (`cacheon qualify`) and an evidence store. None of these exists in the repository yet.", 1},
		{"Reproductions with exchanged lane roles, `qualify calibrate` as a command and the audit role A do not exist here.", 1},
		{"`cacheon ledger` is missing.", 1},
		{"The `qualify calibrate` command is not yet implemented.", 1},
		{"There is no cacheon settle command.", 1},
		// What is true stays allowed.
		{"`cacheon settle` crowns one proposal. Publishing the vector to a chain is not built.", 0},
		{"The `cacheon qualify lane` command the manifests run is not built yet.", 0},
		{"Several validators sharing one ledger would need PostgreSQL; that backend is not built.", 0},
		{"`cacheon settle` exits 1 when the ledger file is missing.", 0},
		{"There is no network in the sandbox of `cacheon verify`.", 0},
		{"```sh\ncacheon settle --ledger l.db # does not exist\n```", 0},
		{"The `static` stage does not exist here.", 0},
	}
	for _, tc := range tests {
		if got := missingClaims(root, tc.text); len(got) != tc.want {
			t.Errorf("%q: %v, want %d claims", tc.text, got, tc.want)
		}
	}
}

// committedInputDirs are the repository's top-level directories of
// committed inputs: a command line's argument under one of them names a
// file or directory of the repository, which must exist. (The guides
// write their outputs elsewhere: out/, models/, channel/, …)
var committedInputDirs = []string{"bench", "catalog", "deploy", "docs", "evaluator", "kernels", "release", "rules", "settlement", "stacks", "tools"}

// fileName is a bare file name with an extension.
var fileName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*\.[A-Za-z][A-Za-z0-9]*$`)

// pathProblems checks the path arguments of a page's cacheon command
// lines: an argument under a committed input directory must exist
// (exists answers for a repository-relative path); and a bare file name
// the page has earlier shown only under a directory ("channel init
// channel" printing channel/1.root.json, then "--channel-root
// 1.root.json") names a file that is not there. Arguments written by an
// earlier line (an output flag's value, a line a command printed, what cp
// or mkdir made) and shell variables or placeholders are left alone.
func pathProblems(root *cobra.Command, page string, exists func(string) bool) []string {
	var problems []string
	// Every path-like word of the page's code lines so far: the bare ones,
	// and the base names of the ones under a directory, with that path.
	bare := map[string]bool{}
	under := map[string]string{}
	produced := map[string]bool{}
	flagged := map[string]bool{}
	record := func(words []string) {
		for _, w := range words {
			w = strings.Trim(w, "\"'(),;:`")
			if w == "" || flagged[w] {
				continue
			}
			if strings.Contains(w, "/") {
				if b := path.Base(w); under[b] == "" {
					under[b] = w
				}
				continue
			}
			bare[w] = true
		}
	}
	for _, l := range codeLines(page) {
		text, _, _ := strings.Cut(l.text, " # ")
		fields := strings.Fields(text)
		var args []docArg
		if l.command {
			args = cacheonArgs(root, fields)
		}
		for _, w := range written(l, fields, len(args) > 0) {
			produced[strings.TrimRight(strings.Trim(w, "\"'(),;:`"), "/")] = true
		}
		for _, a := range args {
			v := strings.Trim(a.value, "\"'")
			if v == "" || strings.ContainsAny(v, "$<>…*{}[]") || strings.Contains(v, "://") {
				continue
			}
			if a.output {
				produced[strings.TrimRight(v, "/")] = true
				continue
			}
			clean := path.Clean(v)
			if top, _, ok := strings.Cut(clean, "/"); ok && contains(committedInputDirs, top) && !producedBy(produced, clean) && !exists(clean) {
				problems = append(problems, lineRef(l.line)+v+" is not in the repository: "+l.text)
			}
			if fileName.MatchString(v) && !bare[v] && under[v] != "" {
				problems = append(problems, lineRef(l.line)+v+": the page has it only as "+under[v]+": "+l.text)
				flagged[v] = true
			}
		}
		record(fields)
	}
	return problems
}

// written returns the words of a code line that name what an earlier
// step wrote: every word a command printed, the destination of cp, mv
// and ln, mkdir's and touch's arguments and a redirection's file. A
// cacheon command's outputs are its output flags' values (cacheonArgs).
func written(l codeLine, fields []string, cacheon bool) []string {
	if !l.command {
		return fields
	}
	var out []string
	for i, f := range fields {
		if (f == ">" || f == ">>") && i+1 < len(fields) {
			out = append(out, fields[i+1])
		}
	}
	if cacheon || len(fields) < 2 {
		return out
	}
	switch fields[0] {
	case "cp", "mv", "ln":
		out = append(out, fields[len(fields)-1])
	case "mkdir", "touch":
		out = append(out, fields[1:]...)
	}
	return out
}

// producedBy reports whether p, or a directory above it below its
// top-level directory, was written by an earlier line.
func producedBy(produced map[string]bool, p string) bool {
	for ; strings.Contains(p, "/"); p = path.Dir(p) {
		if produced[p] {
			return true
		}
	}
	return false
}

// docArg is one argument of a cacheon invocation: a positional argument
// or a flag's value, and whether the flag names something the command
// writes.
type docArg struct {
	value  string
	output bool
}

// cacheonArgs returns the arguments of the cacheon invocations of a
// command line's words.
func cacheonArgs(root *cobra.Command, fields []string) []docArg {
	var args []docArg
	for _, inv := range cacheonInvocations(root, fields) {
		cmd := inv.cmd
		for j := 0; j < len(inv.args); j++ {
			f := inv.args[j]
			if !strings.HasPrefix(f, "--") {
				args = append(args, docArg{value: f})
				continue
			}
			name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
			flag := cmd.Flags().Lookup(name)
			if flag == nil {
				flag = cmd.InheritedFlags().Lookup(name)
			}
			if flag == nil || flag.Value.Type() == "bool" {
				continue
			}
			if !hasValue {
				if j+1 >= len(inv.args) {
					break
				}
				j++
				value = inv.args[j]
			}
			args = append(args, docArg{value: value, output: outputFlag(name)})
		}
	}
	return args
}

// outputFlag reports whether a flag names something the command writes.
func outputFlag(name string) bool {
	return name == "out" || strings.HasSuffix(name, "-out") || name == "rootfs" || name == "evidence" || name == "workspace"
}

// Every path a documented cacheon command line reads from the repository
// exists, and no command line names by its bare name a file the page has
// shown only under a directory.
func TestDocumentedPathsExist(t *testing.T) {
	root := NewRootCommand(Streams{})
	repo := repoDir(".")
	checked := 0
	exists := func(p string) bool {
		checked++
		_, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(p)))
		return err == nil
	}
	for _, p := range documentationPages(t, false) {
		for _, problem := range pathProblems(root, p.text, exists) {
			t.Errorf("%s:%s", p.file, problem)
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d repository paths of documented command lines; the extractor is broken", checked)
	}
	t.Logf("%d repository paths of documented command lines", checked)
}

func TestDocPathProblems(t *testing.T) {
	root := NewRootCommand(Streams{})
	exists := func(p string) bool {
		return p == "kernels/contributions/rmsnorm_torch" || p == "stacks/incumbent.hcl"
	}
	tests := []struct {
		page string
		want int
	}{
		{"```sh\ncacheon verify kernels/contributions/rmsnorm_torch --device cpu\n```", 0},
		{"```sh\ncacheon verify kernels/contributions/rmsnorm_trition --device cpu\n```", 1},
		{"```sh\ncacheon stack plan --incumbent stacks/incumbnt.hcl --candidate ./b\n```", 1},
		{"```sh\ncacheon stack plan --incumbent stacks/incumbent.hcl --candidate ./b\n```", 0},
		// Outputs, variables and placeholders are not the repository's.
		{"```sh\ncacheon model make-test --seed 1 --out models/llama-tiny\ncacheon model provision models/llama-tiny\n```", 0},
		{"```sh\ncacheon stack export --ledger l.db --out stacks/new.hcl\ncacheon stack digest stacks/new.hcl\n```", 0},
		{"```sh\ncacheon verify kernels/$BUNDLE\ncacheon verify kernels/<bundle>\n```", 0},
		// The release engineer guide's channel root, as it was.
		{"```console\n$ cacheon release channel init channel --root-key r.key --targets-key t.key --online-key o.key\nchannel channel: created; consumers pin channel/1.root.json\n$ cacheon release channel show channel --channel-root 1.root.json\n```", 1},
		{"```console\n$ cacheon release channel init channel --root-key r.key --targets-key t.key --online-key o.key\nchannel channel: created; consumers pin channel/1.root.json\n$ cacheon release channel show channel --channel-root channel/1.root.json\n```", 0},
		// A bare name used before it is shown under a directory is fine.
		{"```sh\ncacheon release verify --key release.pub r\ncp release.pub trust/release.pub\ncacheon release verify --key release.pub r\n```", 0},
	}
	for _, tc := range tests {
		if got := pathProblems(root, tc.page, exists); len(got) != tc.want {
			t.Errorf("%q: %v, want %d problems", tc.page, got, tc.want)
		}
	}
}
