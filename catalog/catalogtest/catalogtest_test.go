package catalogtest

import (
	"bytes"
	"testing"

	"github.com/cacheon/engine/catalog"
)

// TestSmallChangesOnlyTheLargestShapes: the small catalog is the default
// one, byte for byte, but for the two largest shapes, and it parses.
func TestSmallChangesOnlyTheLargestShapes(t *testing.T) {
	src, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	def := catalog.DefaultSource()
	if bytes.Contains(src, largest) {
		t.Fatalf("the small catalog still holds %s", largest)
	}
	if got := bytes.Count(src, smaller) - bytes.Count(def, smaller); got != largestCount {
		t.Fatalf("%d shapes replaced, want %d", got, largestCount)
	}
	if !bytes.Equal(bytes.ReplaceAll(src, smaller, largest), bytes.ReplaceAll(def, smaller, largest)) {
		t.Fatal("the small catalog differs from the default in more than the largest shapes")
	}
	c := Small(t)
	for _, name := range []string{"norm.rmsnorm", "activation.silu_and_mul"} {
		if _, ok := c.Slot(name); !ok {
			t.Errorf("the small catalog has no slot %s", name)
		}
	}
}
