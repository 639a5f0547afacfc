package layer

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// TestWriteReturnsTheDigestsOfWhatItWrote checks the per-file digests the
// one pass returns against the bytes of each entry, for entries held in
// memory and copied from disk, in tar (path) order, directories left out.
func TestWriteReturnsTheDigestsOfWhatItWrote(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, sample, 0o644)
	fromDisk, err := FromDir(root, "opt/tree", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		entries []Entry
		bodies  map[string]string // entry path -> bytes
	}{
		{"from disk", fromDisk, prefixed("opt/tree", sample)},
		{"in memory", []Entry{{Path: "z", Data: []byte("zz")}, {Path: "a/b", Data: []byte{}}, {Path: "a/c", Data: []byte("c")}},
			map[string]string{"z": "zz", "a/b": "", "a/c": "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Write(filepath.Join(t.TempDir(), "layer"), tc.entries, Options{Compression: Gzip})
			if err != nil {
				t.Fatal(err)
			}
			var want []FileDigest
			for _, p := range sortedKeys(tc.bodies) {
				body := []byte(tc.bodies[p])
				s1, s256 := sha1.Sum(body), sha256.Sum256(body)
				want = append(want, FileDigest{Path: p, SHA1: hex.EncodeToString(s1[:]), SHA256: hex.EncodeToString(s256[:]), Size: int64(len(body))})
			}
			if !reflect.DeepEqual(w.Files, want) {
				t.Errorf("files = %+v\nwant    %+v", w.Files, want)
			}
		})
	}
}

func prefixed(prefix string, files map[string]string) map[string]string {
	out := map[string]string{}
	for p, b := range files {
		out[prefix+"/"+p] = b
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out) // byte order of the full path: the order plan writes files in
	return out
}
