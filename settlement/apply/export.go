package apply

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/stacks/stack"
)

// Export writes the HCL rendering of the ledger's current evaluation
// stack to out, atomically (a reader sees the old file or the new one,
// never a part), and returns the stack written.
//
// The file is written after a settlement commits, from the ledger, so a
// crash between the commit and the export leaves the file stale, never
// the ledger: exporting again repairs it. The ledger is the authority;
// the file is a rendering of it.
func Export(ctx context.Context, l *ledger.Ledger, out string) (*ledger.Stack, error) {
	cur, err := l.CurrentStack(ctx)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, reject.Errorf("ledger %s has no current evaluation stack to export", l.Path())
	}
	if err := atomicwrite.WriteFile(out, []byte(cur.HCL), 0o644); err != nil {
		return nil, fmt.Errorf("export stack %s: %w", cur.StackDigest, err)
	}
	return cur, nil
}

// CrownedDir is where ExportWorkspace keeps crowned bundles inside a
// repository, and CrownedPackage its Bazel package.
const (
	CrownedDir      = "kernels/crowned"
	CrownedPackage  = "//kernels/crowned"
	ContributionBzl = "stacks/incumbent_contributions.bzl"
)

// Exported is what ExportWorkspace wrote.
type Exported struct {
	Stack *ledger.Stack
	// StackFile is the rendering written (workspace-relative), Labels
	// the incumbent's contribution labels in the .bzl list, Crowned the
	// bundles copied from the ledger's publications, by label.
	StackFile string
	Labels    []string
	Crowned   map[string]string // label -> content hash
}

// ExportWorkspace makes the ledger's current evaluation stack buildable
// by Bazel in the repository at ws (bazel build //stacks:incumbent):
//
//   - every entry whose source is the ledger's publication of crowned
//     bytes is copied, from that publication, to kernels/crowned/c_<first
//     16 hex of its content hash>, checked against the content hash the
//     stack pins (artifact_digest), and declared in
//     kernels/crowned/BUILD.bazel; its source becomes that label, so no
//     byte comes from the path a miner's bundle was taken from;
//   - stacks/incumbent.hcl is the rendering with those labels;
//   - stacks/incumbent_contributions.bzl lists the stack's contribution
//     labels, which stacks/BUILD.bazel hands to the incumbent rule.
//
// The written stack must assemble, against ws, to the ledger's stack
// digest, or nothing is reported written: identities come from the
// manifest, never from where the bytes sit. Crowned bundles no entry
// names any more are removed from kernels/crowned (the ledger keeps
// every publication).
func ExportWorkspace(ctx context.Context, l *ledger.Ledger, ws string, payload contribution.PayloadOptions) (*Exported, error) {
	cur, err := l.CurrentStack(ctx)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, reject.Errorf("ledger %s has no current evaluation stack to export", l.Path())
	}
	f, diags := stack.Parse("current.hcl", []byte(cur.HCL))
	if diags.HasErrors() {
		return nil, fmt.Errorf("%w: current stack %s: its HCL rendering does not parse: %v", ledger.ErrRefused, cur.StackDigest, diags)
	}
	pubs := filepath.Clean(l.PublicationsDir()) + string(filepath.Separator)
	crowned := filepath.Join(ws, filepath.FromSlash(CrownedDir))
	out := &Exported{Stack: cur, StackFile: "stacks/incumbent.hcl", Labels: []string{}, Crowned: map[string]string{}}
	g := f.Clone()
	keep := map[string]bool{}
	for i, c := range g.Contributions {
		// A //label stays as it is; an absolute path must be one of the
		// ledger's publications.
		if !strings.HasPrefix(c.Source, "//") && filepath.IsAbs(c.Source) {
			if !strings.HasPrefix(filepath.Clean(c.Source)+string(filepath.Separator), pubs) {
				return nil, reject.Errorf("stack %s: entry %s is sourced from %s, outside the ledger's publications %s", cur.StackDigest, c.TargetID, c.Source, l.PublicationsDir())
			}
			if c.ArtifactDigest.IsZero() {
				return nil, reject.Errorf("stack %s: crowned entry %s pins no content hash (artifact_digest)", cur.StackDigest, c.TargetID)
			}
			name := "c_" + c.ArtifactDigest.Hex[:16]
			if err := copyCrowned(c.Source, filepath.Join(crowned, name), c.ArtifactDigest); err != nil {
				return nil, fmt.Errorf("crowned entry %s: %w", c.TargetID, err)
			}
			keep[name] = true
			g.Contributions[i].Source = CrownedPackage + ":" + name
			out.Crowned[g.Contributions[i].Source] = c.ArtifactDigest.String()
		}
		out.Labels = append(out.Labels, g.Contributions[i].Source)
	}
	sort.Strings(out.Labels)
	if err := writeCrownedBuild(crowned, keep); err != nil {
		return nil, err
	}
	comment := fmt.Sprintf("The evaluation incumbent, exported from the settlement ledger for Bazel\n"+
		"(stack %s, settlement event %d). Crowned bundles are copies of the ledger's\n"+
		"publications under %s, pinned by artifact_digest.\n"+
		"Regenerate with `cacheon stack export --ledger LEDGER --workspace .`; never edit it by hand.",
		cur.StackDigest, cur.EventSequence, CrownedDir)
	hcl := stack.Format(g, comment)
	digest, _, err := Assemble(hcl, ws, payload, "")
	if err != nil {
		return nil, fmt.Errorf("the exported stack: %w", err)
	}
	if digest != cur.StackDigest {
		return nil, fmt.Errorf("%w: the exported stack assembles to %s in %s, the ledger's current stack is %s", ledger.ErrRefused, digest, ws, cur.StackDigest)
	}
	var bzl strings.Builder
	bzl.WriteString("\"\"\"The evaluation incumbent's contributions, for //stacks:incumbent.\n\nWritten by `cacheon stack export --workspace` with stacks/incumbent.hcl; never edit it by hand.\n\"\"\"\n\nINCUMBENT_CONTRIBUTIONS = [\n")
	for _, lb := range out.Labels {
		fmt.Fprintf(&bzl, "    %q,\n", lb)
	}
	bzl.WriteString("]\n")
	if err := atomicwrite.WriteFile(filepath.Join(ws, filepath.FromSlash(ContributionBzl)), []byte(bzl.String()), 0o644); err != nil {
		return nil, err
	}
	if err := atomicwrite.WriteFile(filepath.Join(ws, filepath.FromSlash(out.StackFile)), hcl, 0o644); err != nil {
		return nil, err
	}
	return out, nil
}

// copyCrowned makes dest a copy of the publication at src whose content
// hash is content: an existing copy is verified, a new one written beside
// it and renamed into place once it verifies.
func copyCrowned(src, dest string, content identity.Digest) error {
	if _, err := os.Lstat(dest); err == nil {
		return verifyContent(dest, content)
	}
	snap, err := bundle.Open(src)
	if err != nil {
		return fmt.Errorf("publication %s: %w", src, err)
	}
	if got, err := snap.ContentHash(false); err != nil || got != content {
		return fmt.Errorf("%w: publication %s hashes to %s (%v), the stack pins %s", ledger.ErrPublication, src, got, err, content)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".crowned-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, "bundle")
	// A repository copy: readable by everyone, as source files are.
	if err := snap.WriteTo(staged, bundle.SourceTree); err != nil {
		return err
	}
	if err := verifyContent(staged, content); err != nil {
		return err
	}
	return os.Rename(staged, dest)
}

func verifyContent(dir string, content identity.Digest) error {
	got, err := bundle.ContentHash(dir)
	if err != nil {
		return err
	}
	if got != content {
		return reject.Errorf("%s hashes to %s, the stack pins %s: remove it and export again", dir, got, content)
	}
	return nil
}

// writeCrownedBuild declares the crowned bundles kept, and removes the
// copies no entry names any more.
func writeCrownedBuild(dir string, keep map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "c_") && !keep[e.Name()] {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if len(keep) == 0 {
		if err := os.Remove(filepath.Join(dir, "BUILD.bazel")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	names := make([]string, 0, len(keep))
	for n := range keep {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(`load("//rules:defs.bzl", "cacheon_contribution")

# Crowned bundles, copied from the settlement ledger's publications by
# cacheon stack export --workspace (never edit by hand); each is pinned by
# its content hash in stacks/incumbent.hcl.
package(default_visibility = ["//visibility:public"])

[
    cacheon_contribution(
        name = bundle,
        srcs = glob(["{}/**".format(bundle)]),
    )
    for bundle in [
`)
	for _, n := range names {
		fmt.Fprintf(&b, "        %q,\n", n)
	}
	b.WriteString("    ]\n]\n")
	return atomicwrite.WriteFile(filepath.Join(dir, "BUILD.bazel"), []byte(b.String()), 0o644)
}
