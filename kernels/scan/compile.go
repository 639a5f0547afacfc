package scan

import (
	"github.com/cacheon/engine/kernels/pyparse"
)

// compilability flags `triton.next_power_of_2(...)` inside functions
// decorated `@jit` or `@<anything>.jit`. The helper runs on the host; in a
// JIT-compiled kernel it fails to compile, which sank many otherwise
// correct submissions. The finding is advisory: a flagged kernel may be
// dead code the bundle never launches.
func (s *sourceScan) compilability(mod *pyparse.Module) {
	pyparse.Inspect(mod, func(n pyparse.Node) bool {
		fd, ok := n.(*pyparse.FunctionDef)
		if !ok || !isJITDecorated(fd) {
			return true
		}
		for _, st := range fd.Body {
			pyparse.Inspect(st, func(n pyparse.Node) bool {
				call, ok := n.(*pyparse.Call)
				if !ok {
					return true
				}
				attr, ok := call.Func.(*pyparse.Attribute)
				if !ok || attr.Attr.Name != "next_power_of_2" {
					return true
				}
				if base, ok := attr.Value.(*pyparse.Name); ok && s.resolvesTo(base.ID, "triton") {
					s.add(call, RuleBrokenKernel, "triton.next_power_of_2() inside @jit kernel %q runs on the host and does not compile in a kernel; compute it in the launcher and pass a tl.constexpr", fd.Name.Name)
				}
				return true
			})
		}
		return false // nested kernels were covered by the walk above
	})
}

// isJITDecorated matches @jit, @x.jit, @x.y.jit and their called forms
// such as @triton.jit(do_not_specialize=[...]).
func isJITDecorated(fd *pyparse.FunctionDef) bool {
	for _, d := range fd.Decorators {
		if c, ok := d.(*pyparse.Call); ok {
			d = c.Func
		}
		switch x := d.(type) {
		case *pyparse.Name:
			if x.ID == "jit" {
				return true
			}
		case *pyparse.Attribute:
			if x.Attr.Name == "jit" {
				return true
			}
		}
	}
	return false
}
