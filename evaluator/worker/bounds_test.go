package worker

import (
	"testing"
	"time"
)

// TestMemoryBoundIsNamed: a worker that fills its /dev/shm past the
// sandbox's memory bound is killed, and the outcome says it was the bound.
func TestMemoryBoundIsNamed(t *testing.T) {
	iso, ok := isolations(t)["sandbox"]
	if !ok {
		t.Skip("no sandbox here")
	}
	t.Parallel()
	iso.Limits.GroupMemory = 128 << 20
	out := runFake(t, iso, "exec head -c 400m /dev/zero > /dev/shm/fill", time.Minute)
	if want := "killed by SIGKILL at the sandbox's memory bound"; out.Describe() != want || out.Clean() {
		t.Fatalf("outcome %q (bounds %+v), want %q", out.Describe(), out.Bounds, want)
	}
}
