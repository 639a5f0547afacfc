package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/descriptor"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// shellBlock returns the body of the first ```sh block of doc holding
// marker.
func shellBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	for _, part := range strings.Split(doc, "```sh\n")[1:] {
		body, _, ok := strings.Cut(part, "```")
		if ok && strings.Contains(body, marker) {
			return body
		}
	}
	t.Fatalf("docs/consumer-guide.md has no sh block with %q", marker)
	return ""
}

// The consumer guide's shell snippets that need only jq and tar run as
// written against a signed layout: the unpack loop extracts the release
// image (whatever its version), and the line that finds the image
// manifest for cosign finds the release image.
func TestConsumerGuideSnippetsRun(t *testing.T) {
	for _, tool := range []string{"bash", "jq", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	guide, err := os.ReadFile(repoDir("docs/consumer-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(guide)
	r := fixture.New(t)
	work := t.TempDir()
	// The guide's layout directory; the fixture's image is named
	// cacheon-engine:test, another version than the guide's.
	if err := os.Rename(r.Signed(t), filepath.Join(work, "release-1.0")); err != nil {
		t.Fatal(err)
	}
	l, err := store.OpenLayout(filepath.Join(work, "release-1.0"))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := l.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	sh := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the guide's snippet fails: %v\n%s\n%s", err, script, out)
		}
		return string(out)
	}

	sh(shellBlock(t, doc, "mkdir rootfs"))
	bin, err := os.ReadFile(filepath.Join(work, "rootfs", "cacheon", "bin", "cacheon"))
	want, _ := os.ReadFile(r.Entrypoint)
	if err != nil || !bytes.Equal(bin, want) {
		t.Errorf("the unpack snippet did not extract the entrypoint (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(work, "rootfs", "cacheon", "release", "release.json")); err != nil {
		t.Errorf("the unpack snippet did not extract the release layer: %v", err)
	}

	var find string
	for _, line := range strings.Split(shellBlock(t, doc, "cosign verify-blob-attestation"), "\n") {
		if strings.HasPrefix(line, "img=$(jq") {
			find = line
		}
	}
	if find == "" {
		t.Fatal("the cosign snippet has no img=$(jq …) line")
	}
	if got := strings.TrimSpace(sh(find + "\necho \"$img\"")); got != desc.Digest.String() {
		t.Errorf("the cosign snippet finds %q, the release image is %s", got, desc.Digest)
	}

	// The cosign snippet as written, where cosign is installed: its
	// first line (cacheon release verify --bundle-out) runs in-process.
	if _, err := exec.LookPath("cosign"); err != nil {
		if os.Getenv("CACHEON_REQUIRE_STOCK_TOOLS") != "" {
			t.Fatalf("cosign is not on PATH and CACHEON_REQUIRE_STOCK_TOOLS is set")
		}
		t.Logf("cosign is not installed, its snippet is not run: %v", err)
		return
	}
	block := shellBlock(t, doc, "cosign verify-blob-attestation")
	first, rest, _ := strings.Cut(block, "\n")
	args := strings.Fields(first)
	if len(args) < 2 || args[0] != "cacheon" {
		t.Fatalf("the cosign snippet does not start with cacheon: %q", first)
	}
	pub, err := os.ReadFile(r.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "release.pub"), pub, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "release.pub" || a == "release-1.0" || a == "provenance.sigstore.json" {
			args[i] = filepath.Join(work, a)
		}
	}
	if code, out, errOut := run(t, "", args[1:]...); code != enginecli.ExitOK {
		t.Fatalf("%s: exit %d\n%s%s", first, code, out, errOut)
	}
	// cosign keeps its state under HOME; the test's is private.
	out := sh("export HOME=\"$PWD/home\"\n" + rest)
	if !strings.Contains(out, "Verified OK") {
		t.Errorf("cosign did not say Verified OK:\n%s", out)
	}
	t.Logf("cosign: %s", strings.TrimSpace(out))
}

// consoleBlock returns the first ```console block of doc holding marker,
// fences included (as codeLines reads them), and the number of the line
// before it in doc (add it to a line number codeLines gives).
func consoleBlock(t *testing.T, doc, marker string) (string, int) {
	t.Helper()
	parts := strings.Split(doc, "```console\n")
	for i, part := range parts[1:] {
		body, _, ok := strings.Cut(part, "```")
		if ok && strings.Contains(body, marker) {
			before := strings.Join(parts[:i+1], "```console\n")
			return "```console\n" + body + "```\n", strings.Count(before, "\n")
		}
	}
	t.Fatalf("docs/consumer-guide.md has no console block with %q", marker)
	return "", 0
}

// cacheonOnPath returns a directory holding a "cacheon" that runs this
// test binary as the command line, for shell lines of the guides.
func cacheonOnPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\n" + mainEnv + "=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "cacheon"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// outputPattern turns a line a guide shows a command printing into a
// pattern of the whole line: "/…/" stands for the start of an absolute
// path the reader's machine chooses.
func outputPattern(line string) *regexp.Regexp {
	return regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(line), "/…/", "/.*/") + "$")
}

// TestConsumerGuideModelStep runs the consumer guide's "Get the model"
// commands as written, in a directory of their own, and checks that each
// prints what the guide shows: the seed the guide names makes the model
// whose content digest the release names, and provision accepts it and
// writes the receipt under the name it gives.
func TestConsumerGuideModelStep(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skipf("bash is not installed: %v", err)
	}
	guide, err := os.ReadFile(repoDir("docs/consumer-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, offset := consoleBlock(t, string(guide), "cacheon model make-test")
	lines := codeLines(block)
	for i := range lines {
		lines[i].line += offset
	}
	work, bin := t.TempDir(), cacheonOnPath(t)
	env := append(commandEnv(os.Environ()), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	commands := 0
	for i := 0; i < len(lines); {
		c := lines[i]
		i++
		if !c.command {
			t.Fatalf("docs/consumer-guide.md:%d: output before any command: %q", c.line, c.text)
		}
		var want []codeLine
		for ; i < len(lines) && !lines[i].command; i++ {
			want = append(want, lines[i])
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", c.text)
		cmd.Dir, cmd.Env = work, env
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("docs/consumer-guide.md:%d: %s: %v\n%s%s", c.line, c.text, err, out.String(), errOut.String())
		}
		commands++
		got := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		if len(want) == 0 {
			continue
		}
		if len(got) != len(want) {
			t.Errorf("docs/consumer-guide.md:%d: %s printed %d lines, the guide shows %d:\n%s", c.line, c.text, len(got), len(want), out.String())
			continue
		}
		for j, w := range want {
			if g := strings.TrimSpace(got[j]); !outputPattern(w.text).MatchString(g) {
				t.Errorf("docs/consumer-guide.md:%d: %s printed\n\t%s\nthe guide shows\n\t%s", w.line, c.text, g, w.text)
			}
		}
	}
	if commands != 3 {
		t.Errorf("ran %d commands of the guide's model step, want 3 (mkdir, make-test, provision)", commands)
	}
}

// TestConsumerGuideEntrypointSourceQuery runs the consumer guide's jq
// line that reads where to fetch the entrypoint's source from the
// provenance statement, on a release that records the repository and
// commit the guide shows, and checks it prints the guide's line.
func TestConsumerGuideEntrypointSourceQuery(t *testing.T) {
	for _, tool := range []string{"bash", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	guide, err := os.ReadFile(repoDir("docs/consumer-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := consoleBlock(t, string(guide), `select(.name == "entrypoint-source")`)
	// The jq program spans two lines (a newline inside its quotes); the
	// line after it is what it prints.
	lines := strings.Split(block, "\n")
	var script []string
	want := ""
	for i, l := range lines {
		if len(script) == 0 && !strings.HasPrefix(l, "$ jq ") {
			continue
		}
		script = append(script, strings.TrimPrefix(l, "$ "))
		if strings.Contains(l, "provenance.intoto.json") {
			if i+1 < len(lines) {
				want = lines[i+1]
			}
			break
		}
	}
	repo, commit, ok := strings.Cut(strings.TrimPrefix(want, "git+"), " ")
	if len(script) == 0 || !strings.HasPrefix(want, "git+") || !ok {
		t.Fatalf("the guide's block has no jq line over provenance.intoto.json followed by git+URL COMMIT:\n%s", block)
	}
	r := fixture.New(t)
	out := r.SignedFrom(t, &descriptor.EntrypointSource{Repository: repo, Commit: commit, BazelTarget: "//tools/cmd/cacheon-engine:cacheon-engine"})
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "provenance.intoto.json"), fixture.Attached(t, out, store.ArtifactProvenance), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.Join(script, "\n"))
	cmd.Dir = work
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the guide's jq line fails: %v\n%s\n%s", err, strings.Join(script, "\n"), got)
	}
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("the guide's jq line printed %q, the guide shows %q", strings.TrimSpace(string(got)), want)
	}
}
