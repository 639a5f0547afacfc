package apply

import (
	"context"
	"fmt"

	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/tools/atomicwrite"
	"github.com/cacheon/engine/tools/reject"
)

// Export writes the HCL rendering of the ledger's current evaluation
// stack to out, atomically (a reader sees the old file or the new one,
// never a part), and returns the stack written.
//
// The file is written after a settlement commits, from the ledger, so a
// crash between the commit and the export leaves the file stale, never
// the ledger: exporting again repairs it. The ledger is the authority;
// the file is a rendering of it.
func Export(ctx context.Context, l *ledger.Ledger, out string) (*ledger.Stack, error) {
	cur, err := l.CurrentStack(ctx)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, reject.Errorf("ledger %s has no current evaluation stack to export", l.Path())
	}
	if err := atomicwrite.WriteFile(out, []byte(cur.HCL), 0o644); err != nil {
		return nil, fmt.Errorf("export stack %s: %w", cur.StackDigest, err)
	}
	return cur, nil
}
