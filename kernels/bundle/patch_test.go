package bundle

import (
	"errors"
	"strings"
	"testing"
)

const goodPatch = `diff --git a/flashinfer/data/csrc/fused_moe/epilogue.cu b/flashinfer/data/csrc/fused_moe/epilogue.cu
index 1111111..2222222 100644
--- a/flashinfer/data/csrc/fused_moe/epilogue.cu
+++ b/flashinfer/data/csrc/fused_moe/epilogue.cu
@@ -1,3 +1,4 @@
 #include <cuda.h>
-int a;
+int a = 1;
+int b;
 int c;
diff --git a/flashinfer/data/csrc/fused_moe/new.cuh b/flashinfer/data/csrc/fused_moe/new.cuh
new file mode 100644
--- /dev/null
+++ b/flashinfer/data/csrc/fused_moe/new.cuh
@@ -0,0 +1,2 @@
+#pragma once
+int d;
\ No newline at end of file
`

func TestParsePatchAcceptsModificationAndNewFile(t *testing.T) {
	p, err := ParsePatch(goodPatch)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 2 {
		t.Fatalf("files = %+v", p.Files)
	}
	mod, nf := p.Files[0], p.Files[1]
	if mod.Path != "flashinfer/data/csrc/fused_moe/epilogue.cu" || mod.New || mod.Added != 2 || mod.Removed != 1 {
		t.Errorf("modification = %+v", mod)
	}
	if nf.Path != "flashinfer/data/csrc/fused_moe/new.cuh" || !nf.New || nf.Added != 2 {
		t.Errorf("new file = %+v", nf)
	}
}

func TestParsePatchRejections(t *testing.T) {
	mod := "--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n"
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "patch touches no file"},
		{"only commentary", "hello\n", "patch touches no file"},
		{"binary", "diff --git a/x b/x\nBinary files a/x and b/x differ\n", "binary patches"},
		{"git binary", "diff --git a/x b/x\nGIT binary patch\nliteral 1\n", "binary patches"},
		{"delete header", "diff --git a/x b/x\ndeleted file mode 100644\n", "only modifications and new files"},
		{"delete via dev null", "--- a/x.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", "deleting a file"},
		{"rename", "diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n", "only modifications and new files"},
		{"implicit rename", "--- a/x.c\n+++ b/y.c\n@@ -1 +1 @@\n-a\n+b\n", "renames are not allowed"},
		{"mode change", "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n", "only modifications"},
		{"symlink new file", "diff --git a/x b/x\nnew file mode 120000\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+target\n", "not a regular file"},
		{"absolute", "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "must be a non-empty relative path"},
		{"traversal", "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", "not a clean path"},
		{"short hunk", "--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n-a\n+b\n", "ends early"},
		{"bad hunk header", "--- a/x.c\n+++ b/x.c\n@@ -x +1 @@\n", "malformed hunk header"},
		{"hunk without header", "@@ -1 +1 @@\n-a\n+b\n", "hunk without a ---/+++ file header"},
		{"no hunk", "--- a/x.c\n+++ b/x.c\n", "has no hunk"},
		{"twice", mod + mod, "patched twice"},
		{"garbage in hunk", "--- a/x.c\n+++ b/x.c\n@@ -1,2 +1,2 @@\n-a\n*b\n", "unexpected line in hunk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePatch(tc.text)
			if err == nil {
				t.Fatal("ParsePatch accepted the patch")
			}
			if !errors.Is(err, ErrPatchForm) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCheckDepPolicy(t *testing.T) {
	patchAt := func(p string) string {
		return "--- a/" + p + "\n+++ b/" + p + "\n@@ -1 +1 @@\n-a\n+b\n"
	}
	tests := []struct {
		name, target, patch, want string
	}{
		{"allowed", "flashinfer", patchAt("flashinfer/data/csrc/fused_moe/x.cu"), ""},
		{"outside dir", "flashinfer", patchAt("flashinfer/data/csrc/norm.cu"), "outside flashinfer/data/csrc/fused_moe/"},
		{"other dependency", "sglang", patchAt("sglang/srt/x.py"), "dependency \"sglang\" may not be patched"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeBundle(t, map[string]string{
				"manifest.toml":   header + siluOp + "[[dep_patches]]\ntarget = \"" + tc.target + "\"\npath = \"p.patch\"\n",
				"kernels/silu.py": "x",
				"p.patch":         tc.patch,
			})
			m, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckDepPolicy(m)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrDepPatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzParsePatch(f *testing.F) {
	f.Add(goodPatch)
	f.Add("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParsePatch(text)
		if err == nil && len(p.Files) == 0 {
			t.Fatal("accepted a patch with no file")
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(header + siluOp))
	f.Add([]byte(header + siluOp + aotExport))
	f.Add([]byte(header + siluOp + "[competition]\ntarget = \"t\"\nmode = \"atomic\"\n"))
	// Hostile shapes the limits bound: a deep dotted key, many keys in one
	// table, nested inline values, many variant rows.
	f.Add([]byte(dottedKey(64)))
	f.Add([]byte(keysInOneTable(64)))
	f.Add([]byte(header + siluOp + "x = {a = {b = [[{c = 1}]]}}\n"))
	f.Add([]byte(variantRows(2, 4)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, FileName)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not classed as invalid", err)
			}
			return
		}
		if len(m.Ops) == 0 || m.BundleID == "" {
			t.Fatal("accepted a manifest without ops or bundle id")
		}
		_ = m.DeclaredFeatures()
	})
}
