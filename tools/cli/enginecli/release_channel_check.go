package enginecli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/channel"
)

// ChannelCheckOptions are the consumer's flags for checking a release
// against a channel.
type ChannelCheckOptions struct {
	dir, root, state, name, version, minVersion string
	noState                                     bool
}

func (o *ChannelCheckOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.dir, "channel", "", "release channel to check the release against: a directory (the publisher's or a mirror) or an http(s) URL")
	f.StringVar(&o.root, "channel-root", "", "the channel's root metadata you trust, obtained with the release key: the newest root you hold (e.g. 1.root.json)")
	f.StringVar(&o.state, "channel-state", "", "writable directory keeping what the channel check accepted, one file per trusted root key (default $CACHEON_CACHE/channel-state, else ~/.cache/cacheon/channel-state)")
	f.BoolVar(&o.noState, "no-channel-state", false, "check the channel without state: rollback protection is off (an older copy of the channel that has not expired is accepted)")
	f.StringVar(&o.name, "name", "", "release name in the channel")
	f.StringVar(&o.version, "version", "", "accept this exact version (listed and not withdrawn) instead of the current one")
	f.StringVar(&o.minVersion, "min-version", "", "refuse a current release below this version")
}

func (o *ChannelCheckOptions) Enabled() bool { return o.dir != "" }

// Validate refuses state flags that would do nothing, or contradict each
// other, before anything is read.
func (o *ChannelCheckOptions) Validate() error {
	if o.dir == "" && (o.state != "" || o.noState) {
		return errors.New("--channel-state and --no-channel-state need --channel")
	}
	if o.state != "" && o.noState {
		return errors.New("give --channel-state or --no-channel-state, not both")
	}
	return nil
}

// stateDir is the directory the channel check keeps its state in: the
// --channel-state given, else channel-state under the cache directory,
// made if it is not there ("" with --no-channel-state). State is the
// default because without it any older copy of the channel that has not
// expired is accepted.
func (o *ChannelCheckOptions) stateDir() (string, error) {
	if o.noState {
		return "", nil
	}
	dir, flag := o.state, "--channel-state "+o.state
	if dir == "" {
		root, ok := CacheRoot()
		if !ok {
			return "", fmt.Errorf("release channel: no directory to keep the channel's state in (%s=off, or no user cache directory: HOME is unset); give --channel-state DIR, a writable directory, or --no-channel-state to check without rollback protection", CacheEnv)
		}
		dir, flag = filepath.Join(root, "channel-state"), "the default channel state directory "+filepath.Join(root, "channel-state")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("release channel: %s: %w; give --channel-state DIR, a writable directory, or --no-channel-state to check without rollback protection", flag, err)
	}
	return dir, nil
}

// SelectRelease checks the channel at now and selects the release the
// flags accept. Without state it warns on w that rollback protection is
// off.
func (o *ChannelCheckOptions) SelectRelease(ctx context.Context, w io.Writer, cmd string, now time.Time) (*channel.Selection, error) {
	if o.root == "" || o.name == "" {
		return nil, errors.New("--channel needs --channel-root (the root metadata you trust) and --name")
	}
	root, err := os.ReadFile(o.root)
	if err != nil {
		return nil, fmt.Errorf("--channel-root: %w", err)
	}
	state, err := o.stateDir()
	if err != nil {
		return nil, err
	}
	if state == "" {
		fmt.Fprintf(w, "cacheon %s: warning: --no-channel-state: rollback protection is off: an older copy of the channel that has not expired is accepted, and so are a retired key's timestamps where a mirror withholds the root rotation\n", cmd)
	}
	src, err := channel.OpenSource(ctx, o.dir)
	if err != nil {
		return nil, err
	}
	ch, err := channel.Load(channel.Options{Source: src, TrustedRoot: root, Now: now, State: state})
	if err != nil {
		return nil, err
	}
	return ch.Select(channel.Query{Name: o.name, Version: o.version, MinVersion: o.minVersion})
}

// DescribeState says which state a channel check kept, for its report
// and log lines.
func DescribeState(st channel.Status) string {
	switch {
	case st.State == "":
		return "no state kept (--no-channel-state)"
	case st.StateCreated:
		return "state " + st.State + " (new)"
	}
	return "state " + st.State
}

// ParseNow is the time a --now flag gives: now when it is empty, else an
// RFC 3339 time (a malformed one is a rejection).
func ParseNow(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Now().UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, reject.Errorf("%s: %w", flag, err)
	}
	return t.UTC(), nil
}
