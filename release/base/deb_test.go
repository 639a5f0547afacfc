package base

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/reject"
)

var sampleData = []debEntry{
	dir("./"),
	dir("./usr/"),
	dir("./usr/bin/"),
	file("./usr/bin/hello", "#!/bin/sh\necho hello\n"),
	symlink("./usr/bin/hi", "hello"),
}

// dataNames reads the names and bodies of a data archive.
func dataNames(t *testing.T, d *Deb) map[string]string {
	t.Helper()
	rc, err := d.Data()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got[hdr.Name] = string(b) + hdr.Linkname
	}
}

func TestParseDebReadsControlAndData(t *testing.T) {
	control := controlFor("hello", "2.10-3")
	cases := []struct {
		name string
		deb  []byte
	}{
		{"data.tar.xz", makeDeb(t, control, ".xz", sampleData)},
		{"data.tar.gz", makeDeb(t, control, ".gz", sampleData)},
		{"data.tar.zst", makeDeb(t, control, ".zst", sampleData)},
		{"data.tar", makeDeb(t, control, "", sampleData)},
		{"GNU member names", arArchive(
			arMember{"debian-binary/", []byte("2.0\n")},
			arMember{"control.tar.gz/", controlTar(t, control)},
			arMember{"data.tar.xz/", compress(t, ".xz", tarOf(t, sampleData))},
		)},
		{"odd member padded", arArchive(
			arMember{"debian-binary", []byte("2.0\n")},
			arMember{"_odd", []byte("abc")},
			arMember{"control.tar.gz", controlTar(t, control)},
			arMember{"data.tar.gz", compress(t, ".gz", tarOf(t, sampleData))},
		)},
		{"control.tar.xz", arArchive(
			arMember{"debian-binary", []byte("2.0\n")},
			arMember{"control.tar.xz", compress(t, ".xz", tarOf(t, []debEntry{file("control", control)}))},
			arMember{"data.tar.xz", compress(t, ".xz", tarOf(t, sampleData))},
		)},
		{"signature after data", arArchive(
			arMember{"debian-binary", []byte("2.0\n")},
			arMember{"control.tar.gz", controlTar(t, control)},
			arMember{"data.tar.xz", compress(t, ".xz", tarOf(t, sampleData))},
			arMember{"_gpgbuilder", []byte("-----BEGIN PGP SIGNATURE-----\n")},
		)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDeb("hello.deb", c.deb)
			if err != nil {
				t.Fatal(err)
			}
			if string(d.Control) != control {
				t.Errorf("control = %q, want %q", d.Control, control)
			}
			for key, want := range map[string]string{
				"Package": "hello", "package": "hello", "VERSION": "2.10-3", "Architecture": "amd64",
				"Description": "hello for tests", "Installed-Size": "12", "Missing": "", "over lines": "",
			} {
				if got := d.Field(key); got != want {
					t.Errorf("Field(%q) = %q, want %q", key, got, want)
				}
			}
			got := dataNames(t, d)
			want := map[string]string{"./": "", "./usr/": "", "./usr/bin/": "", "./usr/bin/hello": "#!/bin/sh\necho hello\n", "./usr/bin/hi": "hello"}
			if len(got) != len(want) {
				t.Errorf("data entries %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("data entry %s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestParseDebRejects(t *testing.T) {
	control := controlFor("hello", "1")
	ctl := controlTar(t, control)
	data := compress(t, ".xz", tarOf(t, sampleData))
	good := arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.gz", ctl}, arMember{"data.tar.xz", data})
	header := func(b []byte) []byte { return b[len(arMagic) : len(arMagic)+arHeaderLen] }
	withSize := func(size string) []byte {
		b := bytes.Clone(good)
		copy(header(b)[48:58], []byte(size+strings.Repeat(" ", 10-len(size))))
		return b
	}
	cases := []struct {
		name string
		deb  []byte
		want string
	}{
		{"empty", nil, "not an ar archive"},
		{"not ar", []byte("PK\x03\x04 a zip file"), "not an ar archive"},
		{"tar", tarOf(t, sampleData), "not an ar archive"},
		{"magic only", []byte(arMagic), "want debian-binary"},
		{"truncated header", good[:len(arMagic)+30], "truncated ar header at byte 8"},
		{"truncated later header", good[:len(arMagic)+arHeaderLen+4+20], "truncated ar header"},
		{"bad header end", func() []byte { b := bytes.Clone(good); header(b)[58] = 'x'; return b }(), "bad ar header"},
		{"size not a number", withSize("abc"), "bad size"},
		{"negative size", withSize("-4"), "bad size"},
		{"size past the end", withSize("999999999"), "bad size"},
		{"truncated member", good[:len(good)-10], "bad size"},
		{"missing data.tar", arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.gz", ctl}), "want debian-binary"},
		{"missing data.tar with extra member", arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.gz", ctl}, arMember{"_gpgorigin", []byte("sig")}), "no control.tar or data.tar"},
		{"missing control.tar", arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"_extra", nil}, arMember{"data.tar.xz", data}), "no control.tar or data.tar"},
		{"control first", arArchive(arMember{"control.tar.gz", ctl}, arMember{"debian-binary", []byte("2.0\n")}, arMember{"data.tar.xz", data}), "want debian-binary"},
		{"data first", arArchive(arMember{"data.tar.xz", data}, arMember{"control.tar.gz", ctl}, arMember{"debian-binary", []byte("2.0\n")}), "want debian-binary"},
		{"format 3", arArchive(arMember{"debian-binary", []byte("3.0\n")}, arMember{"control.tar.gz", ctl}, arMember{"data.tar.xz", data}), "format 2.x"},
		{"duplicate member", arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.gz", ctl}, arMember{"control.tar.gz", ctl}, arMember{"data.tar.xz", data}), `"control.tar.gz" twice`},
		{"unknown control compression", arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.bz2", []byte("BZh9")}, arMember{"data.tar.xz", data}), "unknown compression"},
		{"corrupt control", arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.gz", []byte("not gzip at all")}, arMember{"data.tar.xz", data}), "control.tar.gz"},
		{"no control file", arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.gz", compress(t, ".gz", tarOf(t, []debEntry{file("./md5sums", "")}))}, arMember{"data.tar.xz", data}), "holds no control file"},
		{"control is a directory", arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar", tarOf(t, []debEntry{dir("./control/")})}, arMember{"data.tar.xz", data}), "holds no control file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseDeb("pkg.deb", c.deb)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !errors.Is(err, ErrDeb) || !reject.Is(err) {
				t.Errorf("err = %v: not ErrDeb or not a rejection", err)
			}
			if !strings.Contains(err.Error(), "pkg.deb: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want the name and %q", err, c.want)
			}
		})
	}
}

func TestDebDataRejectsUnknownCompression(t *testing.T) {
	deb := arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.gz", controlTar(t, controlFor("x", "1"))},
		arMember{"data.tar.lzma", []byte("]\x00\x00")})
	d, err := ParseDeb("x.deb", deb)
	if err != nil {
		t.Fatal(err) // the data archive is opened only by Data
	}
	if _, err := d.Data(); err == nil || !strings.Contains(err.Error(), "unknown compression") {
		t.Errorf("Data() err = %v", err)
	}
}
