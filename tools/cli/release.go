package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// newReleaseCommand is the engine's release group (build and serve) with
// the rest of the pipeline added.
func newReleaseCommand(s Streams) *cobra.Command {
	cmd := enginecli.NewReleaseCommand(s)
	cmd.AddCommand(
		newReleaseReviewCommand(s),
		newReleaseBaseCommand(s),
		newReleaseKeygenCommand(s),
		newReleaseSignCommand(s),
		newReleaseVerifyCommand(s),
		newReleasePublishCommand(s),
		newReleaseMirrorCommand(s),
		newReleaseChannelCommand(s),
		newReleaseRebuildCommand(s),
		newReleaseLayoutCommand(s),
		newReleaseLinkCommand(s),
		newReleaseAttachCustodyCommand(s),
	)
	return cmd
}

// openRelease opens LAYOUT|REF: a directory holding an OCI layout, or a
// registry reference whose requests stop when ctx is cancelled.
func openRelease(ctx context.Context, arg string, insecure bool) (store.Store, error) {
	if info, err := os.Stat(arg); err == nil && info.IsDir() {
		return store.OpenLayout(arg)
	}
	if strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "/") {
		return nil, fmt.Errorf("%s: no such OCI layout directory", arg)
	}
	return remote.Open(arg, insecure, remote.WithContext(ctx))
}
