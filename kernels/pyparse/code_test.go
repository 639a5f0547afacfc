package pyparse

import (
	"testing"
	"testing/fstest"
)

func TestDigestFSNamesPathsAndBytes(t *testing.T) {
	base := fstest.MapFS{"a.go": {Data: []byte("package a\n")}, "b.go": {Data: []byte("package b\n")}}
	want, err := DigestFS(base)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		fsys fstest.MapFS
		same bool
	}{
		{"the same files", fstest.MapFS{"b.go": {Data: []byte("package b\n")}, "a.go": {Data: []byte("package a\n")}}, true},
		{"one byte changed", fstest.MapFS{"a.go": {Data: []byte("package a\n")}, "b.go": {Data: []byte("package c\n")}}, false},
		{"a file renamed", fstest.MapFS{"a.go": {Data: []byte("package a\n")}, "c.go": {Data: []byte("package b\n")}}, false},
		{"bytes moved across the boundary", fstest.MapFS{"a.go": {Data: []byte("package a\npackage b\n")}, "b.go": {Data: []byte("")}}, false},
		{"a file added", fstest.MapFS{"a.go": {Data: []byte("package a\n")}, "b.go": {Data: []byte("package b\n")}, "c.go": {}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DigestFS(tt.fsys)
			if err != nil {
				t.Fatal(err)
			}
			if (got == want) != tt.same {
				t.Fatalf("digest equal = %v, want %v", got == want, tt.same)
			}
		})
	}
	if CodeDigest() != CodeDigest() || CodeDigest() == want {
		t.Fatal("CodeDigest is not a stable digest of this package's source")
	}
}
