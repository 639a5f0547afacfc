package base

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/reject"
)

const committedLock = "../../deploy/base/debian-bookworm-python3-torch.lock.json"

func hexOf(c byte) string { return strings.Repeat(string(c), 64) }

// validLock is a small lock that passes Check; each call returns a fresh
// copy the caller may change.
func validLock() *Lock {
	return &Lock{
		FormatVersion: LockFormatVersion,
		Name:          "debian-test",
		Distribution:  "debian bookworm",
		Architecture:  "amd64",
		Epoch:         1700000000,
		Requested:     []string{"python3"},
		Env:           []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"},
		Links: []Link{
			{Path: "usr/lib/libblas.so.3", Target: "blas/libblas.so.3", Why: "libblas3's postinst: update-alternatives <blas> & co"},
		},
		Packages: []Package{
			{Name: "libc6", Version: "2.36-9+deb12u14", Architecture: "amd64", Source: "glibc",
				URL: "http://deb.debian.org/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb", SHA256: hexOf('a'), Size: 2759320, InstalledSize: 12986},
			{Name: "python3", Version: "3.11.2-1+b1", Architecture: "amd64", Source: "python3-defaults (3.11.2-1)",
				URL: "https://deb.debian.org/debian/pool/main/p/python3-defaults/python3_3.11.2-1%2bb1_amd64.deb", SHA256: hexOf('b'), Size: 26456, InstalledSize: 83},
			{Name: "tzdata", Version: "2025b-0+deb12u2", Architecture: "all",
				URL: "http://deb.debian.org/debian/pool/main/t/tzdata/tzdata_2025b-0%2bdeb12u2_all.deb", SHA256: hexOf('c'), Size: 258000},
		},
	}
}

// rawJSON encodes l as it is, without Marshal's sorting, so that a case
// can put packages out of order.
func rawJSON(t *testing.T, l *Lock) []byte {
	t.Helper()
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseLockRejectsEachBadField(t *testing.T) {
	const file = "deploy/base/test.lock.json"
	cases := []struct {
		name  string
		edit  func(l *Lock)
		field string // what the error names after the file
	}{
		{"format version 0", func(l *Lock) { l.FormatVersion = 0 }, "format_version"},
		{"format version 2", func(l *Lock) { l.FormatVersion = 2 }, "format_version"},
		{"empty name", func(l *Lock) { l.Name = "" }, "name"},
		{"name with blank", func(l *Lock) { l.Name = "debian test" }, "name"},
		{"name with slash", func(l *Lock) { l.Name = "debian/test" }, "name"},
		{"name with colon", func(l *Lock) { l.Name = "debian:test" }, "name"},
		{"name with at", func(l *Lock) { l.Name = "debian@test" }, "name"},
		{"empty distribution", func(l *Lock) { l.Distribution = "" }, "distribution"},
		{"unknown architecture", func(l *Lock) { l.Architecture = "i386" }, "architecture"},
		{"architecture all", func(l *Lock) { l.Architecture = "all" }, "architecture"},
		{"negative epoch", func(l *Lock) { l.Epoch = -1 }, "epoch"},
		{"nothing requested", func(l *Lock) { l.Requested = nil }, "requested"},
		{"requested not locked", func(l *Lock) { l.Requested = []string{"python3", "python3-torch"} }, "requested[1]"},
		{"env without =", func(l *Lock) { l.Env = []string{"A=1", "PATH"} }, "env[1]"},
		{"env without key", func(l *Lock) { l.Env = []string{"=x"} }, "env[0]"},
		{"no packages", func(l *Lock) { l.Packages = nil; l.Requested = []string{"x"} }, "packages"},
		{"empty package name", func(l *Lock) { l.Packages[0].Name = "" }, "packages[0].name"},
		{"package name with underscore", func(l *Lock) { l.Packages[0].Name = "lib_c6" }, "packages[0].name"},
		{"package name with slash", func(l *Lock) { l.Packages[0].Name = "main/libc6" }, "packages[0].name"},
		{"unsorted packages", func(l *Lock) { l.Packages[0], l.Packages[1] = l.Packages[1], l.Packages[0] }, "packages[1].name"},
		{"duplicate package", func(l *Lock) { l.Packages[2] = l.Packages[1] }, "packages[2].name"},
		{"empty version", func(l *Lock) { l.Packages[1].Version = "" }, "packages[1].version"},
		{"other architecture", func(l *Lock) { l.Packages[0].Architecture = "arm64" }, "packages[0].architecture"},
		{"ftp url", func(l *Lock) { l.Packages[0].URL = "ftp://deb.debian.org/debian/pool/x.deb" }, "packages[0].url"},
		{"relative url", func(l *Lock) { l.Packages[0].URL = "pool/main/x.deb" }, "packages[0].url"},
		{"url not a deb", func(l *Lock) { l.Packages[0].URL = "http://deb.debian.org/debian/pool/main/x.tar.gz" }, "packages[0].url"},
		{"unparsable url", func(l *Lock) { l.Packages[0].URL = "http://[::1/x.deb" }, "packages[0].url"},
		{"short sha256", func(l *Lock) { l.Packages[1].SHA256 = "abc" }, "packages[1].sha256"},
		{"uppercase sha256", func(l *Lock) { l.Packages[1].SHA256 = strings.Repeat("AB", 32) }, "packages[1].sha256"},
		{"non-hex sha256", func(l *Lock) { l.Packages[1].SHA256 = strings.Repeat("zz", 32) }, "packages[1].sha256"},
		{"sha512 length", func(l *Lock) { l.Packages[1].SHA256 = hexOf('d') + hexOf('d') }, "packages[1].sha256"},
		{"size 0", func(l *Lock) { l.Packages[2].Size = 0 }, "packages[2].size"},
		{"negative size", func(l *Lock) { l.Packages[2].Size = -5 }, "packages[2].size"},
		{"negative installed size", func(l *Lock) { l.Packages[2].InstalledSize = -1 }, "packages[2].installed_size_kib"},
		{"absolute link", func(l *Lock) { l.Links[0].Path = "/usr/lib/libblas.so.3" }, "links[0].path"},
		{"unclean link", func(l *Lock) { l.Links[0].Path = "usr/lib/../lib/libblas.so.3" }, "links[0].path"},
		{"link with dot", func(l *Lock) { l.Links[0].Path = "./usr/lib/libblas.so.3" }, "links[0].path"},
		{"link with double slash", func(l *Lock) { l.Links[0].Path = "usr//lib/libblas.so.3" }, "links[0].path"},
		{"link with trailing slash", func(l *Lock) { l.Links[0].Path = "usr/lib/" }, "links[0].path"},
		{"link leaving the root", func(l *Lock) { l.Links[0].Path = "../etc/passwd" }, "links[0].path"},
		{"link to dotdot", func(l *Lock) { l.Links[0].Path = ".." }, "links[0].path"},
		{"empty link path", func(l *Lock) { l.Links[0].Path = "" }, "links[0].path"},
		{"duplicate link", func(l *Lock) { l.Links = append(l.Links, Link{Path: l.Links[0].Path, Target: "x", Why: "y"}) }, "links[1].path"},
		{"link without target", func(l *Lock) { l.Links[0].Target = "" }, "links[0].target"},
		{"link target with NUL", func(l *Lock) { l.Links[0].Target = "a\x00b" }, "links[0].target"},
		{"link without why", func(l *Lock) { l.Links[0].Why = "" }, "links[0].why"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := validLock()
			c.edit(l)
			_, err := ParseLock(file, rawJSON(t, l))
			if err == nil {
				t.Fatalf("accepted")
			}
			if want := file + ": " + c.field + ": "; !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want it to name %q", err, want)
			}
			if !errors.Is(err, ErrLock) || !reject.Is(err) {
				t.Errorf("err = %v: not ErrLock or not a rejection", err)
			}
			// Check gives the same answer on the struct itself.
			if cerr := l.Check(file); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("Check = %v, ParseLock = %v", cerr, err)
			}
		})
	}
}

func TestParseLockRejectsBadJSON(t *testing.T) {
	const file = "x.lock.json"
	valid, err := validLock().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown field", bytes.Replace(valid, []byte(`"epoch"`), []byte(`"extra": 1, "epoch"`), 1), `unknown field "extra"`},
		{"unknown package field", bytes.Replace(valid, []byte(`"sha256"`), []byte(`"md5": "x", "sha256"`), 1), `unknown field "md5"`},
		{"wrong type", bytes.Replace(valid, []byte(`"format_version": 1`), []byte(`"format_version": "1"`), 1), "format_version"},
		{"second object", append(append([]byte{}, valid...), "{}"...), "data after the lock object"},
		{"trailing word", append(append([]byte{}, valid...), "null"...), "data after the lock object"},
		{"trailing garbage", append(append([]byte{}, valid...), "x"...), "data after the lock object"},
		{"trailing brace", append(append([]byte{}, valid...), "}"...), "data after the lock object"},
		{"trailing bracket", append(append([]byte{}, valid...), "\n]\n"...), "data after the lock object"},
		{"truncated", valid[:len(valid)/2], "unexpected EOF"},
		{"empty", nil, "EOF"},
		{"array", []byte(`[]`), "cannot unmarshal array"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseLock(file, c.in)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), file+": ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want the file name and %q", err, c.want)
			}
			if !errors.Is(err, ErrLock) || !reject.Is(err) {
				t.Errorf("err = %v: not ErrLock or not a rejection", err)
			}
		})
	}
	// Whitespace after the object is not data.
	if _, err := ParseLock(file, append(append([]byte{}, valid...), " \n\t\n"...)); err != nil {
		t.Errorf("trailing whitespace: %v", err)
	}
}

func TestLockRoundTrips(t *testing.T) {
	cases := []struct {
		name string
		edit func(l *Lock)
	}{
		{"as is", func(*Lock) {}},
		{"no env, no links", func(l *Lock) { l.Env, l.Links = nil, nil }},
		{"packages unsorted", func(l *Lock) {
			p := l.Packages
			l.Packages = []Package{p[2], p[0], p[1]}
		}},
		{"arm64 and no source", func(l *Lock) {
			l.Architecture = "arm64"
			for i := range l.Packages {
				if l.Packages[i].Architecture != "all" {
					l.Packages[i].Architecture = "arm64"
				}
				l.Packages[i].Source = ""
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := validLock()
			c.edit(l)
			before := append([]Package(nil), l.Packages...)
			b, err := l.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if len(before) != len(l.Packages) || before[0] != l.Packages[0] {
				t.Errorf("Marshal reordered the lock's own packages")
			}
			if !bytes.HasSuffix(b, []byte("}\n")) || !bytes.HasPrefix(b, []byte("{\n  \"format_version\": 1,\n")) {
				t.Errorf("not the committed format:\n%s", b)
			}
			if bytes.Contains(b, []byte("null")) {
				t.Errorf("empty lists are written as null:\n%s", b)
			}
			if bytes.Contains(b, []byte(`\u0026`)) || bytes.Contains(b, []byte(`\u003c`)) {
				t.Errorf("HTML characters are escaped:\n%s", b)
			}
			got, err := ParseLock("round.lock.json", b)
			if err != nil {
				t.Fatalf("ParseLock(Marshal()): %v", err)
			}
			for i := 1; i < len(got.Packages); i++ {
				if got.Packages[i-1].Name >= got.Packages[i].Name {
					t.Errorf("packages not sorted: %s before %s", got.Packages[i-1].Name, got.Packages[i].Name)
				}
			}
			again, err := got.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, again) {
				t.Errorf("round trip changed the bytes:\n%s\nvs\n%s", b, again)
			}
		})
	}
}

func TestCommittedLockIsInMarshalFormat(t *testing.T) {
	path := filepath.FromSlash(committedLock)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseLock(path, b)
	if err != nil {
		t.Fatal(err)
	}
	if l.Name != "debian-bookworm-python3-torch" || l.Architecture != "amd64" || len(l.Packages) == 0 {
		t.Errorf("unexpected lock: name %q arch %q, %d packages", l.Name, l.Architecture, len(l.Packages))
	}
	for _, r := range []string{"python3", "python3-torch"} {
		found := false
		for _, q := range l.Requested {
			found = found || q == r
		}
		if !found {
			t.Errorf("%s is not requested", r)
		}
	}
	m, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m, b) {
		i := 0
		for i < len(m) && i < len(b) && m[i] == b[i] {
			i++
		}
		t.Errorf("Marshal does not reproduce %s: first difference at byte %d (%q vs %q)", path, i,
			b[i:min(i+40, len(b))], m[i:min(i+40, len(m))])
	}
	if l.DownloadSize() <= 0 {
		t.Errorf("download size %d", l.DownloadSize())
	}
}
