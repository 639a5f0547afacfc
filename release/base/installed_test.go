package base

import (
	"bytes"
	"compress/gzip"
	"context"
	"path/filepath"
	"reflect"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/release/descriptor"
)

// layerOf is a gzip tar layer of files (a body "" with link set makes a
// symlink).
func layerOf(t *testing.T, entries ...debEntry) v1.Layer {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(tarOf(t, entries))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return static.NewLayer(b.Bytes(), types.OCILayer)
}

// gunzipDigest is the SHA-256 of l's gzip stream decompressed.
func gunzipDigest(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := v1.SHA256(zr)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

const dpkgStatus = `Package: libc6
Status: install ok installed
Architecture: amd64
Source: glibc
Version: 2.36-9
Description: GNU C Library
 with a continuation line

Package: removed
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: libc6
Status: install ok installed
Architecture: i386
Source: glibc
Version: 2.36-9
`

func TestReadInstalled(t *testing.T) {
	tests := []struct {
		name   string
		layers [][]debEntry
		want   *Installed
	}{
		{"no package database", [][]debEntry{{file("etc/hostname", "x\n")}}, &Installed{}},
		{"dpkg status: installed packages only, by name and architecture",
			[][]debEntry{{file("var/lib/dpkg/status", dpkgStatus), file("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n")}},
			&Installed{Distro: "debian-12", Packages: []descriptor.BasePackage{
				{Name: "libc6", Version: "2.36-9", Architecture: "amd64", Source: "glibc"},
				{Name: "libc6", Version: "2.36-9", Architecture: "i386", Source: "glibc"},
			}}},
		{"status.d records, os-release through usr/lib",
			[][]debEntry{{
				file("./var/lib/dpkg/status.d/zlib1g", "Package: zlib1g\nVersion: 1:1.2.13\nArchitecture: amd64\nSource: zlib\n"),
				file("./var/lib/dpkg/status.d/adduser", "Package: adduser\nVersion: 3.134\nArchitecture: all\n"),
				symlink("./etc/os-release", "../usr/lib/os-release"),
				file("./usr/lib/os-release", "ID=debian\n"),
			}},
			&Installed{Distro: "debian", Packages: []descriptor.BasePackage{
				{Name: "adduser", Version: "3.134", Architecture: "all"},
				{Name: "zlib1g", Version: "1:1.2.13", Architecture: "amd64", Source: "zlib"},
			}}},
		{"a later layer's file and whiteouts win",
			[][]debEntry{
				{file("var/lib/dpkg/status.d/a", "Package: a\nVersion: 1\nArchitecture: all\n"),
					file("var/lib/dpkg/status.d/b", "Package: b\nVersion: 1\nArchitecture: all\n"),
					file("var/lib/dpkg/status.d/c", "Package: c\nVersion: 1\nArchitecture: all\n"),
					file("etc/os-release", "ID=debian\n")},
				{file("var/lib/dpkg/status.d/a", "Package: a\nVersion: 2\nArchitecture: all\n"),
					file("var/lib/dpkg/status.d/.wh.b", ""),
					file("etc/.wh.os-release", "")},
			},
			&Installed{Packages: []descriptor.BasePackage{
				{Name: "a", Version: "2", Architecture: "all"},
				{Name: "c", Version: "1", Architecture: "all"},
			}}},
		{"an opaque whiteout hides lower layers only",
			[][]debEntry{
				{file("var/lib/dpkg/status.d/a", "Package: a\nVersion: 1\nArchitecture: all\n")},
				{file("var/lib/dpkg/status.d/b", "Package: b\nVersion: 1\nArchitecture: all\n"),
					file("var/lib/dpkg/status.d/.wh..wh..opq", "")},
			},
			&Installed{Packages: []descriptor.BasePackage{{Name: "b", Version: "1", Architecture: "all"}}}},
		{"an opaque whiteout clears status.d",
			[][]debEntry{
				{file("var/lib/dpkg/status.d/a", "Package: a\nVersion: 1\nArchitecture: all\n")},
				{file("var/lib/dpkg/status.d/.wh..wh..opq", "")},
			},
			&Installed{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var layers []v1.Layer
			for _, l := range tc.layers {
				layers = append(layers, layerOf(t, l...))
			}
			img, err := mutate.AppendLayers(empty.Image, layers...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadInstalled(img)
			if err != nil {
				t.Fatal(err)
			}
			// The diff IDs read are the digests of the layers'
			// decompressed bytes.
			if len(got.DiffIDs) != len(layers) {
				t.Fatalf("%d diff IDs for %d layers", len(got.DiffIDs), len(layers))
			}
			for i, l := range layers {
				if want := gunzipDigest(t, l); got.DiffIDs[i] != want {
					t.Errorf("layer %d: diff ID %s, want %s", i, got.DiffIDs[i], want)
				}
			}
			got.DiffIDs = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A base built from a lock lists exactly the lock's packages.
func TestReadInstalledListsTheLockedPackages(t *testing.T) {
	pkgs := samplePackages(t)
	l := lockOf(t, sampleLinks, pkgs...)
	out := filepath.Join(t.TempDir(), "base")
	res, err := Build(context.Background(), l, out, BuildOptions{Cache: cacheWith(t, pkgs...)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadInstalled(openBuilt(t, out, res))
	if err != nil {
		t.Fatal(err)
	}
	var want []descriptor.BasePackage
	for _, p := range l.Packages {
		want = append(want, descriptor.BasePackage{Name: p.Name, Version: p.Version, Architecture: p.Architecture})
	}
	if got.Distro != "debian" || !reflect.DeepEqual(got.Packages, want) {
		t.Errorf("read %+v, want distro debian and %+v", got, want)
	}
}
