package verify

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
)

// prebuild compiles the bundle's cuda_sources rows in the contained
// compiler child (or reopens the sealed artifact the caller gave), so
// candidate workers load the sealed libraries and never compile. A
// non-empty verdict decides every such row without running it: FAIL for
// sources that do not compile, ERROR when the host could not build them.
func (r *runner) prebuild(m *bundle.Manifest, rep *Report) (verdict, reason string, err error) {
	if len(prebuild.Rows(m)) == 0 {
		return "", "", nil
	}
	if r.o.NativeArtifact != "" {
		s, err := prebuild.Open(r.o.NativeArtifact)
		if err != nil {
			return "", "", err
		}
		r.native = s
		rep.NativeArtifact = s.Digest.Hex
		return "", "", nil
	}
	res, err := prebuild.Build(r.ctx, prebuild.Options{Bundle: r.bundle, Store: filepath.Join(r.runDir, "native"),
		WorkDir: r.runDir, Target: r.o.Device, Python: r.python, Timeout: r.o.PrebuildTimeout, Limits: r.o.Limits,
		Unisolated: r.o.Unisolated, Progress: r.o.Progress})
	var nd *prebuild.NoDecisionError
	switch {
	case err == nil:
	case reject.Is(err):
		return Fail, "prebuild: " + err.Error(), nil
	case errors.As(err, &nd), errors.Is(err, prebuild.ErrToolchain):
		return Error, err.Error(), nil
	default:
		return "", "", err
	}
	r.native = res.Sealed
	rep.NativeArtifact = res.Sealed.Digest.Hex
	rep.Prebuild = &res.Receipt
	return "", "", nil
}

// nativeLibrary is the sealed library of a cuda_sources row, bound to the
// staged bundle's bytes; nil when the row declares none.
func (r *runner) nativeLibrary(op *bundle.Op) (*worker.NativeLibrary, error) {
	if len(op.CUDASources) == 0 || r.native == nil {
		return nil, nil
	}
	l, err := r.native.Bind(r.bundle, op.Slot, op.Variant, op.CUDASources)
	if err != nil {
		return nil, err
	}
	f, ok := r.native.File(l.Path)
	if !ok {
		return nil, fmt.Errorf("sealed prebuild artifact %s lists no file %s", r.native.Digest.Hex, l.Path)
	}
	return &worker.NativeLibrary{Artifact: r.native.Digest.Hex, Path: r.native.Path(l.Path), SHA256: f.SHA256}, nil
}
