package sandbox

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStart is what a sandbox adds to every worker start: build the
// namespaces and the root, drop privileges, run /bin/true, tear down. The
// plain exec of /bin/true beside it is the floor.
//
//	go test -run '^$' -bench . ./evaluator/sandbox
func BenchmarkStart(b *testing.B) {
	b.Run("sandbox", func(b *testing.B) {
		dir := b.TempDir()
		if err := SearchableDir(filepath.Dir(dir)); err != nil {
			b.Fatal(err)
		}
		if err := SearchableDir(dir); err != nil {
			b.Fatal(err)
		}
		root := filepath.Join(dir, "root")
		if err := Available(root); err != nil {
			b.Skip(err)
		}
		s := Spec{Root: root, Procs: []Proc{{Path: "/bin/true", Args: []string{"true"}, Dir: "/"}}, Hide: []string{dir}}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if res, err := Run(context.Background(), s); err != nil || res.Exits[0].Code != 0 {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("plain-exec", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
