package materialize

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/stack"
)

// TestMaterializeReusesTheAssemblySnapshots materializes a stack once from
// its source directories and once from the inspections assembly took,
// after the sources were edited: the reused snapshots are what is
// written, so the second tree equals the first, while reading the edited
// directories is refused. An inspection of another directory is never
// used for a target.
func TestMaterializeReusesTheAssemblySnapshots(t *testing.T) {
	opts := testOptions(t)
	tests := []struct {
		name    string
		bundles []string
	}{
		{"one contribution", []string{"silu_and_mul_triton"}},
		{"two contributions", []string{"silu_and_mul_triton", "rmsnorm_triton"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dirs []string
			for _, name := range tt.bundles {
				dirs = append(dirs, copyBundle(t, name))
			}
			b := evaluationStack(t, opts, dirs...)
			fresh, err := Materialize(b.manifest, b.resolve, filepath.Join(t.TempDir(), "fresh"), opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range dirs {
				if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("edited after assembly"), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			reuse := opts
			reuse.Inspections = b.inspections
			out := filepath.Join(t.TempDir(), "reused")
			got, err := Materialize(b.manifest, b.resolve, out, reuse)
			if err != nil {
				t.Fatalf("materialize from the assembly snapshots: %v", err)
			}
			if got.TreeDigest != fresh.TreeDigest || !reflect.DeepEqual(got.Files, fresh.Files) {
				t.Errorf("tree from the snapshots %s, from the directories %s", got.TreeDigest, fresh.TreeDigest)
			}
			if _, err := Verify(out); err != nil {
				t.Errorf("verify the tree written from the snapshots: %v", err)
			}

			_, err = Materialize(b.manifest, b.resolve, filepath.Join(t.TempDir(), "edited"), opts)
			var e *Error
			if !errors.As(err, &e) || e.Rule != RuleIdentity {
				t.Errorf("materialize from the edited directories = %v, want a %s refusal", err, RuleIdentity)
			}

			// The same inspections, but each target resolves to a fresh
			// copy: the inspections name other directories and are not used.
			elsewhere := map[string]string{}
			for id, dir := range b.dirs {
				elsewhere[id] = filepath.Join(t.TempDir(), filepath.Base(dir))
				if err := os.Rename(dir, elsewhere[id]); err != nil {
					t.Fatal(err)
				}
			}
			resolve := func(target string, _ stack.Ref) (string, error) { return elsewhere[target], nil }
			_, err = Materialize(b.manifest, resolve, filepath.Join(t.TempDir(), "moved"), reuse)
			if !errors.As(err, &e) || e.Rule != RuleIdentity {
				t.Errorf("materialize with inspections of other directories = %v, want a %s refusal", err, RuleIdentity)
			}
		})
	}
}

// TestReusableNeedsSnapshotAndClosure pins which inspections stand in for
// a read of the source.
func TestReusableNeedsSnapshotAndClosure(t *testing.T) {
	opts := testOptions(t)
	dir := copyBundle(t, "silu_and_mul_triton")
	b := evaluationStack(t, opts, dir)
	var in *contribution.Inspection
	for _, v := range b.inspections {
		in = v
	}
	noSnapshot := *in
	bundleCopy := *in.Bundle
	bundleCopy.Snapshot = nil
	noSnapshot.Bundle = &bundleCopy
	noClosure := *in
	payload := *in.SelectedPayload
	payload.Closure = nil
	noClosure.SelectedPayload = &payload
	tests := []struct {
		name string
		in   *contribution.Inspection
		want bool
	}{
		{"assembly inspection", in, true},
		{"none", nil, false},
		{"without a snapshot", &noSnapshot, false},
		{"without a closure", &noClosure, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reusable(tt.in); got != tt.want {
				t.Errorf("reusable = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestMaterializeRefusesWhatTheSnapshotRefuses changes a source after the
// stack was built in ways bundle.Open refuses, and checks the rule each
// refusal is reported under.
func TestMaterializeRefusesWhatTheSnapshotRefuses(t *testing.T) {
	opts := testOptions(t)
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		rule   string
		want   string
	}{
		{"named pipe", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "kernels", "pipe"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, RuleSourceEntry, "a named pipe"},
		{"file over the intake limit", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "big.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(bundle.MaxFileBytes + 1); err != nil {
				t.Fatal(err)
			}
		}, RuleInspection, "load: big.bin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyBundle(t, "silu_and_mul_triton")
			b := evaluationStack(t, opts, dir)
			tt.change(t, dir)
			done := make(chan error, 1)
			go func() {
				_, err := Materialize(b.manifest, b.resolve, filepath.Join(t.TempDir(), "out"), opts)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("materialize blocked on the changed source")
			}
			var e *Error
			if !errors.As(err, &e) || e.Rule != tt.rule || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("materialize = %v, want a %s refusal naming %q", err, tt.rule, tt.want)
			}
		})
	}
}
