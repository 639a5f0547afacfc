package base

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const simulation = `NOTE: This is only a simulation!
      apt-get needs root privileges for real execution.
      Keep also in mind that locking is deactivated,
      so don't depend on the relevance to the real current situation!
Reading package lists...
Building dependency tree...
The following additional packages will be installed:
  libc6 tzdata zlib1g
The following NEW packages will be installed:
  libc6 python3 tzdata zlib1g
0 upgraded, 4 newly installed, 0 to remove and 0 not upgraded.
Inst libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64])
Inst zlib1g (1:1.2.13.dfsg-1+deb12u1 Debian:12.15/oldstable [amd64])
Inst python3 [3.11.2-1] (3.11.2-1+b1 Debian:12.15/oldstable [amd64])
Inst tzdata (2025b-0+deb12u2 Debian:12.15/oldstable, Debian-Security:12/oldstable-security [all])
Conf libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64])
Conf zlib1g (1:1.2.13.dfsg-1+deb12u1 Debian:12.15/oldstable [amd64])
Conf python3 (3.11.2-1+b1 Debian:12.15/oldstable [amd64])
Conf tzdata (2025b-0+deb12u2 Debian:12.15/oldstable, Debian-Security:12/oldstable-security [all])
`

const printURIs = `'http://deb.debian.org/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb' libc6_2.36-9+deb12u14_amd64.deb 2759320 MD5Sum:8d98c4cb0b4d3f0e2e5d6f2b7a1c9e30
'http://deb.debian.org/debian/pool/main/z/zlib/zlib1g_1.2.13.dfsg-1%2bdeb12u1_amd64.deb' zlib1g_1%3a1.2.13.dfsg-1+deb12u1_amd64.deb 88368 MD5Sum:4b1c3d1e0f5a6b7c8d9e0f1a2b3c4d5e
'http://deb.debian.org/debian/pool/main/p/python3-defaults/python3_3.11.2-1%2bb1_amd64.deb' python3_3.11.2-1+b1_amd64.deb 26456 MD5Sum:0a1b2c3d4e5f60718293a4b5c6d7e8f9
'http://deb.debian.org/debian-security/pool/updates/main/t/tzdata/tzdata_2025b-0%2bdeb12u2_all.deb' tzdata_2025b-0+deb12u2_all.deb 258000 MD5Sum:ffeeddccbbaa99887766554433221100
`

var (
	libc6SHA   = hexOf('1')
	zlibSHA    = hexOf('2')
	python3SHA = hexOf('3')
	tzdataSHA  = hexOf('4')
)

// records is apt-cache show output; libc6's version is listed by two
// archives (the first record wins), and an older python3 too.
var records = `Package: libc6
Source: glibc
Version: 2.36-9+deb12u14
Installed-Size: 12986
Maintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>
Architecture: amd64
Replaces: libc6-amd64
Depends: libgcc-s1
Description: GNU C Library: Shared libraries
 Contains the standard libraries that are used by nearly all programs on
 the system.
Multi-Arch: same
Homepage: https://www.gnu.org/software/libc/libc.html
Description-md5: fc3001b0b90a1c8e6690b283a619d57f
Section: libs
Priority: optional
Filename: pool/main/g/glibc/libc6_2.36-9+deb12u14_amd64.deb
Size: 2759320
MD5sum: 8d98c4cb0b4d3f0e2e5d6f2b7a1c9e30
SHA256: ` + libc6SHA + `

Package: libc6
Source: glibc
Version: 2.36-9+deb12u14
Installed-Size: 99999
Architecture: amd64
Filename: pool/main/g/glibc/libc6_2.36-9+deb12u14_amd64.deb
Size: 1
SHA256: ` + hexOf('f') + `

Package: zlib1g
Source: zlib
Version: 1:1.2.13.dfsg-1+deb12u1
Installed-Size: 168
Architecture: amd64
Size: 88368
SHA256: ` + zlibSHA + `

Package: python3
Source: python3-defaults (3.11.2-1)
Version: 3.11.2-1+b1
Installed-Size: 83
Architecture: amd64
Size: 26456
SHA256: ` + python3SHA + `

Package: python3
Source: python3-defaults
Version: 3.11.2-1
Installed-Size: 80
Architecture: amd64
Size: 26000
SHA256: ` + hexOf('9') + `

Package: tzdata
Version: 2025b-0+deb12u2
Installed-Size: 3
Architecture: all
Size: 258000
SHA256: ` + tzdataSHA + `

`

func TestParseSimulation(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []inst
		err  string
	}{
		{"apt output", simulation, []inst{
			{"libc6", "2.36-9+deb12u14"}, {"zlib1g", "1:1.2.13.dfsg-1+deb12u1"},
			{"python3", "3.11.2-1+b1"}, {"tzdata", "2025b-0+deb12u2"},
		}, ""},
		{"upgrade of an installed version", "Inst python3 [3.11.2-1] (3.11.2-1+b1 Debian:12.15/oldstable [amd64])\n", []inst{{"python3", "3.11.2-1+b1"}}, ""},
		{"multi-arch name", "Inst libc6:amd64 (2.36-9 Debian:12/stable [amd64])\n", []inst{{"libc6:amd64", "2.36-9"}}, ""},
		{"nothing to do", "Reading package lists...\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n", nil, "installs nothing"},
		{"only Conf lines", "Conf libc6 (2.36-9 Debian:12/stable [amd64])\n", nil, "installs nothing"},
		{"not an Inst line", " Inst libc6 (2.36-9 Debian:12/stable [amd64])\nInstall libc6 (2.36-9 x)\n", nil, "installs nothing"},
		{"empty", "", nil, "installs nothing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseSimulation([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestParseURIs(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string]string
		err  string
	}{
		{"apt output", printURIs, map[string]string{
			"libc6=2.36-9+deb12u14":          "http://deb.debian.org/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb",
			"zlib1g=1:1.2.13.dfsg-1+deb12u1": "http://deb.debian.org/debian/pool/main/z/zlib/zlib1g_1.2.13.dfsg-1%2bdeb12u1_amd64.deb",
			"python3=3.11.2-1+b1":            "http://deb.debian.org/debian/pool/main/p/python3-defaults/python3_3.11.2-1%2bb1_amd64.deb",
			"tzdata=2025b-0+deb12u2":         "http://deb.debian.org/debian-security/pool/updates/main/t/tzdata/tzdata_2025b-0%2bdeb12u2_all.deb",
		}, ""},
		{"other lines are skipped", "Reading package lists...\n\nNeed to get 2759 kB of archives.\n'http://h/p/a_1_all.deb' a_1_all.deb 10 SHA256:00\n", map[string]string{"a=1": "http://h/p/a_1_all.deb"}, ""},
		{"tilde escaped", "'http://h/p/ca-certificates_20250419%7edeb12u2_all.deb' ca-certificates_20250419%7edeb12u2_all.deb 160948 SHA256:00\n",
			map[string]string{"ca-certificates=20250419~deb12u2": "http://h/p/ca-certificates_20250419%7edeb12u2_all.deb"}, ""},
		{"nothing", "", map[string]string{}, ""},
		{"file name without arch", "'http://h/p/a_1.deb' a_1.deb 10 SHA256:00\n", nil, "not name_version_arch.deb"},
		{"file name with extra part", "'http://h/p/a_1_2_all.deb' a_1_2_all.deb 10 SHA256:00\n", nil, "not name_version_arch.deb"},
		{"bad escape", "'http://h/p/a_1%zz_all.deb' a_1%zz_all.deb 10 SHA256:00\n", nil, "a_1%zz_all.deb"},
		{"not a deb", "'http://h/p/a_1_all.udeb' a_1_all.deb 10 SHA256:00\n", nil, "is not a .deb URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseURIs([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestParseRecords(t *testing.T) {
	recs := parseRecords([]byte(records))
	keys := map[string]bool{}
	for k := range recs {
		keys[k] = true
	}
	wantKeys := map[string]bool{"libc6=2.36-9+deb12u14": true, "zlib1g=1:1.2.13.dfsg-1+deb12u1": true,
		"python3=3.11.2-1+b1": true, "python3=3.11.2-1": true, "tzdata=2025b-0+deb12u2": true}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Fatalf("records %v, want %v", keys, wantKeys)
	}
	cases := []struct {
		key, field, want string
	}{
		{"libc6=2.36-9+deb12u14", "SHA256", libc6SHA}, // the first of the two records
		{"libc6=2.36-9+deb12u14", "Size", "2759320"},
		{"libc6=2.36-9+deb12u14", "Installed-Size", "12986"},
		{"libc6=2.36-9+deb12u14", "Source", "glibc"},
		{"libc6=2.36-9+deb12u14", "Description", "GNU C Library: Shared libraries\n Contains the standard libraries that are used by nearly all programs on\n the system."},
		{"libc6=2.36-9+deb12u14", "Multi-Arch", "same"},
		{"libc6=2.36-9+deb12u14", "Homepage", "https://www.gnu.org/software/libc/libc.html"},
		{"python3=3.11.2-1+b1", "Source", "python3-defaults (3.11.2-1)"},
		{"python3=3.11.2-1+b1", "SHA256", python3SHA},
		{"python3=3.11.2-1", "SHA256", hexOf('9')},
		{"zlib1g=1:1.2.13.dfsg-1+deb12u1", "Version", "1:1.2.13.dfsg-1+deb12u1"},
		{"tzdata=2025b-0+deb12u2", "Source", ""},
		{"tzdata=2025b-0+deb12u2", "Architecture", "all"},
	}
	for _, c := range cases {
		if got := recs[c.key][c.field]; got != c.want {
			t.Errorf("%s %s = %q, want %q", c.key, c.field, got, c.want)
		}
	}
	if got := parseRecords([]byte("\n\nN: Unable to locate package x\n\n")); len(got) != 0 {
		t.Errorf("records without Package: %v", got)
	}
}

func TestDistribution(t *testing.T) {
	cases := []struct{ in, want string }{
		{"PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n", "debian bookworm"},
		{"ID=\"ubuntu\"\nVERSION_CODENAME=\"noble\"\n", "ubuntu noble"},
		{"ID=debian\n", "debian"},
		{"ID=debian\nVERSION_CODENAME=\n", "debian"},
		{"", "unknown"},
		{"# a comment\n", "unknown"},
	}
	for _, c := range cases {
		if got := distribution([]byte(c.in)); got != c.want {
			t.Errorf("distribution(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// fakeApt answers Resolve's commands with the samples above; edit
// changes one answer.
type fakeApt struct {
	t     *testing.T
	calls []string
	out   map[string]string // by command and first argument
	fail  string
}

func newFakeApt(t *testing.T) *fakeApt {
	return &fakeApt{t: t, out: map[string]string{
		"dpkg --print-architecture": "amd64\n",
		"apt-get -s":                simulation,
		"apt-get --print-uris":      printURIs,
		"apt-cache show":            records,
	}}
}

func (f *fakeApt) run(_ context.Context, name string, args ...string) ([]byte, error) {
	call := name + " " + strings.Join(args, " ")
	f.calls = append(f.calls, call)
	key := name + " " + args[0]
	if key == f.fail {
		return nil, fmt.Errorf("%s: exit status 100", key)
	}
	out, ok := f.out[key]
	if !ok {
		f.t.Errorf("unexpected command %s", call)
	}
	return []byte(out), nil
}

func osRelease(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "os-release")
	if err := os.WriteFile(p, []byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveWritesALock(t *testing.T) {
	apt := newFakeApt(t)
	links := []Link{{Path: "usr/lib/x86_64-linux-gnu/libblas.so.3", Target: "blas/libblas.so.3", Why: "libblas3's postinst"}}
	l, err := Resolve(context.Background(), ResolveRequest{
		Name: "debian-test", Requested: []string{"python3"}, Env: []string{"LANG=C.UTF-8"}, Links: links, Epoch: 42,
		Run: apt.run, OSRelease: osRelease(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &Lock{
		FormatVersion: LockFormatVersion, Name: "debian-test", Distribution: "debian bookworm", Architecture: "amd64",
		Epoch: 42, Requested: []string{"python3"}, Env: []string{"LANG=C.UTF-8"}, Links: links,
		Packages: []Package{
			{Name: "libc6", Version: "2.36-9+deb12u14", Architecture: "amd64", Source: "glibc",
				URL: "http://deb.debian.org/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb", SHA256: libc6SHA, Size: 2759320, InstalledSize: 12986},
			{Name: "python3", Version: "3.11.2-1+b1", Architecture: "amd64", Source: "python3-defaults (3.11.2-1)",
				URL: "http://deb.debian.org/debian/pool/main/p/python3-defaults/python3_3.11.2-1%2bb1_amd64.deb", SHA256: python3SHA, Size: 26456, InstalledSize: 83},
			{Name: "tzdata", Version: "2025b-0+deb12u2", Architecture: "all",
				URL: "http://deb.debian.org/debian-security/pool/updates/main/t/tzdata/tzdata_2025b-0%2bdeb12u2_all.deb", SHA256: tzdataSHA, Size: 258000, InstalledSize: 3},
			{Name: "zlib1g", Version: "1:1.2.13.dfsg-1+deb12u1", Architecture: "amd64", Source: "zlib",
				URL: "http://deb.debian.org/debian/pool/main/z/zlib/zlib1g_1.2.13.dfsg-1%2bdeb12u1_amd64.deb", SHA256: zlibSHA, Size: 88368, InstalledSize: 168},
		},
	}
	if !reflect.DeepEqual(l, want) {
		got, _ := l.Marshal()
		exp, _ := want.Marshal()
		t.Errorf("lock\n%s\nwant\n%s", got, exp)
	}
	// apt is asked about an empty system without recommends, and
	// apt-cache about exactly the versions apt would install.
	wantCalls := []string{
		"dpkg --print-architecture",
		"apt-get -s -o Dir::State::status=/dev/null -o APT::Install-Recommends=false -o APT::Install-Suggests=false install python3",
		"apt-get --print-uris -qq -o Dir::State::status=/dev/null -o APT::Install-Recommends=false -o APT::Install-Suggests=false install python3",
		"apt-cache show libc6=2.36-9+deb12u14 zlib1g=1:1.2.13.dfsg-1+deb12u1 python3=3.11.2-1+b1 tzdata=2025b-0+deb12u2",
	}
	if !reflect.DeepEqual(apt.calls, wantCalls) {
		t.Errorf("calls\n%s\nwant\n%s", strings.Join(apt.calls, "\n"), strings.Join(wantCalls, "\n"))
	}
	// The result is a lock in the committed format.
	b, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseLock("resolved", b); err != nil {
		t.Error(err)
	}
}

func TestResolveFails(t *testing.T) {
	cases := []struct {
		name string
		edit func(f *fakeApt, req *ResolveRequest)
		want string
		lock bool // an ErrLock
	}{
		{"dpkg fails", func(f *fakeApt, _ *ResolveRequest) { f.fail = "dpkg --print-architecture" }, "exit status 100", false},
		{"simulation fails", func(f *fakeApt, _ *ResolveRequest) { f.fail = "apt-get -s" }, "exit status 100", false},
		{"print-uris fails", func(f *fakeApt, _ *ResolveRequest) { f.fail = "apt-get --print-uris" }, "exit status 100", false},
		{"apt-cache fails", func(f *fakeApt, _ *ResolveRequest) { f.fail = "apt-cache show" }, "exit status 100", false},
		{"nothing to install", func(f *fakeApt, _ *ResolveRequest) { f.out["apt-get -s"] = "0 upgraded, 0 newly installed\n" }, "installs nothing", false},
		{"no record", func(f *fakeApt, _ *ResolveRequest) {
			f.out["apt-cache show"] = strings.Replace(records, "Package: tzdata", "Package: tzdata-legacy", 1)
		}, "apt-cache show tzdata=2025b-0+deb12u2: no record", false},
		{"no URL", func(f *fakeApt, _ *ResolveRequest) {
			f.out["apt-get --print-uris"] = strings.Join(strings.Split(printURIs, "\n")[:3], "\n")
		}, "no URL for tzdata 2025b-0+deb12u2", false},
		{"no os-release", func(_ *fakeApt, req *ResolveRequest) { req.OSRelease = filepath.Join(req.OSRelease, "..", "missing") }, "distribution", false},
		{"record without sha256", func(f *fakeApt, _ *ResolveRequest) {
			f.out["apt-cache show"] = strings.Replace(records, "SHA256: "+zlibSHA, "SHA1: x", 1)
		}, "packages[3].sha256", true},
		{"foreign architecture", func(f *fakeApt, _ *ResolveRequest) { f.out["dpkg --print-architecture"] = "i386\n" }, "architecture", true},
		{"requested not installed", func(_ *fakeApt, req *ResolveRequest) { req.Requested = []string{"python3", "python3-minimal"} }, "requested[1]", true},
		{"bad name", func(_ *fakeApt, req *ResolveRequest) { req.Name = "debian test" }, "resolved lock: name", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			apt := newFakeApt(t)
			req := ResolveRequest{Name: "debian-test", Requested: []string{"python3"}, Run: apt.run, OSRelease: osRelease(t)}
			c.edit(apt, &req)
			l, err := Resolve(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("lock %v, err = %v; want %q", l, err, c.want)
			}
			if errors.Is(err, ErrLock) != c.lock {
				t.Errorf("errors.Is(err, ErrLock) = %v, want %v", !c.lock, c.lock)
			}
		})
	}
}
