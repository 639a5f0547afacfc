package review

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
)

// ErrSourceMismatch is wrapped when reviewed source does not reproduce
// what was crowned.
var ErrSourceMismatch = errors.New("reviewed source does not reproduce the crowned contribution")

// git runs git with a fixed environment: no user or system configuration
// and no pager, so the host's git setup cannot change what is read.
func git(repo string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_PAGER=cat", "LC_ALL=C")
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// ResolveCommit returns the full commit id rev names in repo, and checks
// that rev was given as that full id (a review binds an exact commit,
// never a branch or an abbreviation).
func ResolveCommit(repo, rev string) (string, error) {
	if !commitPattern.MatchString(rev) {
		return "", fmt.Errorf("commit %q: give the full 40-hex commit id, not a branch, tag or abbreviation", rev)
	}
	out, err := git(repo, nil, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("commit %s in %s: %w", rev, repo, err)
	}
	full := strings.TrimSpace(string(out))
	if full != rev {
		return "", fmt.Errorf("commit %s resolves to %s", rev, full)
	}
	return full, nil
}

// gitFile is one blob of the reviewed subtree.
type gitFile struct {
	rel    string // relative to the subtree
	object string
}

// Checkout writes the files of subdir at commit in repo, taken from the
// git object store (never from the working tree), into the new directory
// dest. Only regular blobs (mode 100644 or 100755) are allowed: a
// symbolic link or submodule in reviewed source is an error naming it.
// Files the content hash skips (__pycache__, .pyc, ...) are left out.
func Checkout(repo, commit, subdir, dest string) error {
	if _, err := ResolveCommit(repo, commit); err != nil {
		return err
	}
	subdir = strings.Trim(path.Clean("/"+filepath.ToSlash(subdir)), "/")
	args := []string{"ls-tree", "-r", "-z", "--full-tree", commit}
	if subdir != "" {
		args = append(args, "--", subdir+"/")
	}
	out, err := git(repo, nil, args...)
	if err != nil {
		return err
	}
	var files []gitFile
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, p, ok := strings.Cut(string(rec), "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 3 {
			return fmt.Errorf("git ls-tree: unexpected line %q", rec)
		}
		rel := p
		if subdir != "" {
			rel = strings.TrimPrefix(p, subdir+"/")
		}
		mode, kind, object := fields[0], fields[1], fields[2]
		if kind != "blob" || (mode != "100644" && mode != "100755") {
			return fmt.Errorf("%s at %s: %s (mode %s) is not a regular file; reviewed source may hold regular files only", p, commit, kind, mode)
		}
		if bundle.Skipped(rel) {
			continue
		}
		files = append(files, gitFile{rel: rel, object: object})
	}
	if len(files) == 0 {
		return fmt.Errorf("%s at %s holds no files", displayDir(subdir), commit)
	}
	if err := os.Mkdir(dest, 0o700); err != nil {
		return err
	}
	var req bytes.Buffer
	for _, f := range files {
		req.WriteString(f.object + "\n")
	}
	blobs, err := git(repo, &req, "cat-file", "--batch")
	if err != nil {
		return err
	}
	br := bufio.NewReader(bytes.NewReader(blobs))
	for _, f := range files {
		header, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		hf := strings.Fields(header)
		if len(hf) != 3 || hf[0] != f.object || hf[1] != "blob" {
			return fmt.Errorf("git cat-file: unexpected header %q for %s", strings.TrimSpace(header), f.rel)
		}
		size, err := strconv.ParseInt(hf[2], 10, 64)
		if err != nil {
			return fmt.Errorf("git cat-file: size in %q: %w", header, err)
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(br, data); err != nil {
			return fmt.Errorf("git cat-file: %s: %w", f.rel, err)
		}
		if _, err := br.ReadByte(); err != nil { // the newline after each blob
			return fmt.Errorf("git cat-file: %s: %w", f.rel, err)
		}
		p := filepath.Join(dest, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o444); err != nil {
			return err
		}
	}
	return nil
}

func displayDir(d string) string {
	if d == "" {
		return "the repository root"
	}
	return d
}

// SourceTreeAtCommit returns the integrated source tree digest of subdir
// at commit, computed from the git objects.
func SourceTreeAtCommit(repo, commit, subdir string) (identity.Digest, error) {
	tmp, err := os.MkdirTemp("", "cacheon-review-")
	if err != nil {
		return identity.Digest{}, err
	}
	defer os.RemoveAll(tmp)
	dest := filepath.Join(tmp, "src")
	if err := Checkout(repo, commit, subdir, dest); err != nil {
		return identity.Digest{}, err
	}
	return contribution.IntegratedSourceTreeDigest(dest)
}

// FindSource returns the directory of repo at commit whose integrated
// source tree digest is treeDigest, searching every directory that holds
// a manifest.toml. It is how a rebuilder finds reviewed source from a
// record alone.
func FindSource(repo, commit, treeDigest string) (string, error) {
	if _, err := ResolveCommit(repo, commit); err != nil {
		return "", err
	}
	out, err := git(repo, nil, "ls-tree", "-r", "-z", "--name-only", "--full-tree", commit)
	if err != nil {
		return "", err
	}
	var candidates []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if s := string(p); s == "manifest.toml" || strings.HasSuffix(s, "/manifest.toml") {
			candidates = append(candidates, strings.TrimSuffix(strings.TrimSuffix(s, "manifest.toml"), "/"))
		}
	}
	for _, dir := range candidates {
		got, err := SourceTreeAtCommit(repo, commit, dir)
		if err == nil && got.String() == treeDigest {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no directory of %s at %s has integrated source tree digest %s (searched %d bundle directories)", repo, commit, treeDigest, len(candidates))
}
