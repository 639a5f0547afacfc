package manifest

import "testing"

// FuzzParseRebuildPlan feeds arbitrary bytes to the rebuild.json parser
// (a bundle author writes that file): it refuses or returns a plan of
// distinct registered patchers, never panics.
func FuzzParseRebuildPlan(f *testing.F) {
	f.Add([]byte(`{"steps":[{"type":"repo_python","path":"build_cuda_ext.py"},{"type":"repo_python","path":"cacheon/patchers/apply_dep_patch.py"}]}`))
	f.Add([]byte(`{"steps":[]}`))
	f.Add([]byte(`{"steps":[{"type":"bundle_python","path":"x.py"}]}`))
	f.Add([]byte(`{"steps":[{"type":"repo_python","path":"../build_cuda_ext.py"}],"steps":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseRebuildPlan(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, s := range p.Steps {
			if seen[s.Name] {
				t.Fatalf("patcher %s listed twice in %s", s.Name, data)
			}
			seen[s.Name] = true
		}
		p.ObservedFeatures()
	})
}
