package channel

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/trustedmetadata"
)

// MaxFileBytes bounds every file read from a channel: metadata and release
// records are small, and a hostile mirror must not make a client read
// without end.
const MaxFileBytes = 16 << 20

// maxRootVersions bounds the root chain a client walks in one update.
const maxRootVersions = 1024

// Source reads a channel's files by their name in the repository
// (root.json, 2.root.json, targets/NAME/VERSION.json). A missing file is
// an error wrapping fs.ErrNotExist.
type Source interface {
	Read(name string) ([]byte, error)
	String() string
}

// Dir is a channel in a local directory (the publisher's, or a mirror).
type Dir string

func (d Dir) String() string { return string(d) }

// Read reads name under the directory: a plain file of at most
// MaxFileBytes, never through a symbolic link.
func (d Dir) Read(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("channel file name %q is not a clean relative path", name)
	}
	p := filepath.Join(string(d), filepath.FromSlash(name))
	info, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("channel file %s is not a regular file (%s)", name, info.Mode().Type())
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, name)
}

func readLimited(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("channel file %s is larger than %d bytes", name, MaxFileBytes)
	}
	return b, nil
}

// MaxClockBehind is how far a consumer's clock may be behind the
// publisher's: a timestamp signed later than this after the consumer's
// now is refused (clock skew between hosts is seconds to minutes).
const MaxClockBehind = time.Hour

// Options say how to check a channel.
type Options struct {
	Source Source
	// TrustedRoot is root metadata the consumer obtained out of band (any
	// version of the channel's root; usually 1.root.json, shipped with
	// the release key). Newer roots are walked from the channel.
	TrustedRoot []byte
	// Now is when expiry is judged; zero means now.
	Now time.Time
	// State, when set, is a directory of channel states: the check keeps
	// this channel's in StatePath(State, TrustedRoot), reads it under a
	// lock, refuses a channel older than it (rollback), starts from the
	// newest root it trusted (a withheld rotation), and writes it back
	// atomically. Empty keeps none: any copy of the channel that has not
	// expired is then accepted.
	State string
}

// Status is what a channel check established, for reports.
type Status struct {
	Source           string    `json:"source"`
	RootVersion      int64     `json:"root_version"`
	TargetsVersion   int64     `json:"targets_version"`
	SnapshotVersion  int64     `json:"snapshot_version"`
	TimestampVersion int64     `json:"timestamp_version"`
	TimestampSigned  time.Time `json:"timestamp_signed"`
	TimestampExpires time.Time `json:"timestamp_expires"`
	// Age is how long ago the timestamp was signed, as of the check.
	Age string `json:"age"`
	// State is the state file the check read and wrote ("" with none);
	// StateCreated says it had none before this check.
	State        string `json:"state,omitempty"`
	StateCreated bool   `json:"state_created,omitempty"`
}

// Channel is a channel whose metadata verified.
type Channel struct {
	Status  Status
	targets *metadata.Metadata[metadata.TargetsType]
	src     Source
	now     time.Time
}

// Entry is one release the channel lists.
type Entry struct {
	Record    Record      `json:"record"`
	Withdrawn *Withdrawal `json:"withdrawn,omitempty"`
}

// sourceError classifies a failed read of the channel's file name. A
// channel that cannot be reached (a network error) or is not there at all
// (its first file missing: a wrong path or URL) gave nothing to judge: an
// error of the run (exit 1), never a verdict. A file missing from a
// channel that is there (snapshot.json withheld by a mirror), or anything
// else the source refused (an oversized file, an HTTP error status), is a
// refusal.
func sourceError(src Source, name string, err error, reached bool) error {
	var ue *url.Error
	if errors.As(err, &ue) || (!reached && errors.Is(err, fs.ErrNotExist)) {
		return fmt.Errorf("release channel %s: %s: %w", src, name, err)
	}
	return refuse("%s: %s: %v", src, name, err)
}

// Load runs TUF's client workflow over the channel: walk the root chain
// from the trusted root, then timestamp, snapshot and targets, each signed
// by its role's keys under the newest root, none expired at opts.Now, no
// version older than the state's. Every refusal wraps ErrChannel.
func Load(opts Options) (*Channel, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	src := opts.Source
	reached := false // a file of the channel was read: it is there
	read := func(name string) ([]byte, error) {
		b, err := src.Read(name)
		if err != nil {
			return nil, sourceError(src, name, err, reached)
		}
		reached = true
		return b, nil
	}
	if len(opts.TrustedRoot) == 0 {
		return nil, refuse("no trusted root metadata given (the channel's 1.root.json, obtained with the release key)")
	}
	rootData := opts.TrustedRoot
	var sf *stateFile
	var prev *state
	if opts.State != "" {
		path, err := StatePath(opts.State, opts.TrustedRoot)
		if err != nil {
			return nil, err
		}
		// Held from reading the state to writing it: two checks of one
		// channel at once must not write back an older state over a
		// newer one.
		if sf, prev, err = openState(path); err != nil {
			return nil, err
		}
		defer sf.close()
		// Start from the newest root trusted so far: the one pinned, or
		// a later one a previous check walked to.
		if prev != nil {
			pinned, err := metadata.Root().FromBytes(opts.TrustedRoot)
			if err != nil {
				return nil, refuse("trusted root: %v", err)
			}
			if prev.RootVersion > pinned.Signed.Version {
				rootData = prev.Root
			}
		}
	}
	trusted, err := trustedmetadata.New(rootData)
	if err != nil {
		return nil, refuse("trusted root: %v", err)
	}
	trusted.RefTime = now
	// Walk the root chain: N+1.root.json must be signed by N's root keys
	// and its own.
	for i := 0; i < maxRootVersions; i++ {
		name := itoa(trusted.Root.Signed.Version+1) + ".root.json"
		b, err := src.Read(name)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, sourceError(src, name, err, reached)
		}
		reached = true
		if _, err := trusted.UpdateRoot(b); err != nil {
			return nil, refuse("%s: %s: %v", src, name, err)
		}
	}
	rootVersion := trusted.Root.Signed.Version
	if trusted.Root.Signed.IsExpired(now) {
		return nil, refuse("%s: root version %d expired on %s (%s); the channel's root keys must sign a new root", src, rootVersion, trusted.Root.Signed.Expires.Format(time.RFC3339), age(now, trusted.Root.Signed.Expires))
	}
	tsData, err := read("timestamp.json")
	if err != nil {
		return nil, err
	}
	if _, err := trusted.UpdateTimestamp(tsData); err != nil {
		return nil, refuse("%s: timestamp.json: %v%s%s", src, err, expiredTimestampDetail(trusted, now), withheldRootDetail(src, err, prev, sf, rootVersion, opts.TrustedRoot))
	}
	snapData, err := read("snapshot.json")
	if err != nil {
		return nil, err
	}
	if _, err := trusted.UpdateSnapshot(snapData, false); err != nil {
		return nil, refuse("%s: snapshot.json: %v", src, err)
	}
	targetsData, err := read("targets.json")
	if err != nil {
		return nil, err
	}
	targets, err := trusted.UpdateTargets(targetsData)
	if err != nil {
		return nil, refuse("%s: targets.json: %v", src, err)
	}
	ts := trusted.Timestamp.Signed
	st := Status{
		Source: src.String(), RootVersion: rootVersion, TargetsVersion: targets.Signed.Version,
		SnapshotVersion: trusted.Snapshot.Signed.Version, TimestampVersion: ts.Version,
		TimestampExpires: ts.Expires.UTC(),
	}
	if s, ok := ts.UnrecognizedFields[signedAtField].(string); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			st.TimestampSigned = t.UTC()
			st.Age = age(now, t)
			// A clock far behind accepts metadata long expired (nothing
			// expires in its past): a timestamp signed well after "now"
			// says the clock is wrong, not the channel.
			if t.Sub(now) > MaxClockBehind {
				return nil, refuse("%s: timestamp.json was signed at %s, %s after this machine's clock (%s): the clock is behind, and a clock behind accepts expired metadata; set the clock", src, t.UTC().Format(time.RFC3339), t.Sub(now).Truncate(time.Second), now.UTC().Format(time.RFC3339))
			}
		}
	}
	if sf != nil {
		if err := checkNotOlder(sf, prev, trusted, st); err != nil {
			return nil, err
		}
		st.State, st.StateCreated = sf.path, prev == nil
		next := &state{
			Type: StateType, Channel: src.String(), CheckedAt: now,
			RootVersion: rootVersion, TimestampVersion: st.TimestampVersion,
			SnapshotVersion: st.SnapshotVersion, TargetsVersion: st.TargetsVersion,
			Root: mustBytes(trusted.Root.ToBytes(false)), Timestamp: tsData,
		}
		if err := sf.write(next); err != nil {
			return nil, err
		}
	}
	return &Channel{Status: st, targets: targets, src: src, now: now}, nil
}

// checkNotOlder refuses a channel older than the state: any of its
// timestamp, snapshot or release list at a lower version than the one
// accepted last (a mirror serving an old copy, or a rolled-back channel),
// or a timestamp of the same version that says something else (a channel
// re-created or forked under the same keys). A role whose key was rotated
// since starts again: its old versions are no floor for the new key.
func checkNotOlder(sf *stateFile, prev *state, trusted *trustedmetadata.TrustedMetadata, st Status) error {
	if prev == nil {
		return nil
	}
	root := trusted.Root
	since := ""
	if !prev.CheckedAt.IsZero() {
		since = " on " + prev.CheckedAt.UTC().Format(time.RFC3339)
	}
	older := func(file string, offered, stored int64) error {
		return refuse("%s: an older copy of the channel: %s is version %d, but this machine accepted version %d%s (state %s); a mirror serving an old copy, or a channel rolled back, is refused", st.Source, file, offered, stored, since, sf.path)
	}
	if sameKeys(prev.root, root, metadata.TIMESTAMP) {
		if st.TimestampVersion < prev.TimestampVersion {
			return older("timestamp.json", st.TimestampVersion, prev.TimestampVersion)
		}
		if st.TimestampVersion == prev.TimestampVersion && !sameSigned(trusted.Timestamp, prev.timestamp) {
			return refuse("%s: timestamp.json version %d is not the version %d this machine accepted%s (state %s): the channel was re-created or forked under the same keys", st.Source, st.TimestampVersion, prev.TimestampVersion, since, sf.path)
		}
	}
	if sameKeys(prev.root, root, metadata.SNAPSHOT) && st.SnapshotVersion < prev.SnapshotVersion {
		return older("snapshot.json", st.SnapshotVersion, prev.SnapshotVersion)
	}
	if sameKeys(prev.root, root, metadata.TARGETS) && st.TargetsVersion < prev.TargetsVersion {
		return older("targets.json", st.TargetsVersion, prev.TargetsVersion)
	}
	return nil
}

// withheldRootDetail explains a timestamp whose signature does not verify
// under a root newer than the one pinned, which the state brought, when
// the channel does not hold that root: a mirror that withholds the
// rotation and serves what the retired key signed.
func withheldRootDetail(src Source, err error, prev *state, sf *stateFile, rootVersion int64, pinned []byte) string {
	var unsigned *metadata.ErrUnsignedMetadata
	if prev == nil || prev.RootVersion != rootVersion || !errors.As(err, &unsigned) {
		return ""
	}
	p, perr := metadata.Root().FromBytes(pinned)
	if perr != nil || p.Signed.Version >= rootVersion {
		return ""
	}
	name := itoa(rootVersion) + ".root.json"
	if _, rerr := src.Read(name); !errors.Is(rerr, fs.ErrNotExist) {
		return ""
	}
	return fmt.Sprintf(" (this machine accepted root version %d before (state %s), and the channel does not hold %s: it withholds a key rotation and serves metadata signed by a key that root retired)", rootVersion, sf.path, name)
}

func expiredTimestampDetail(trusted *trustedmetadata.TrustedMetadata, now time.Time) string {
	if trusted.Timestamp == nil || !trusted.Timestamp.Signed.IsExpired(now) {
		return ""
	}
	return fmt.Sprintf(" (version %d expired on %s, %s: the channel is not being refreshed, or this mirror is stale)", trusted.Timestamp.Signed.Version, trusted.Timestamp.Signed.Expires.Format(time.RFC3339), age(now, trusted.Timestamp.Signed.Expires))
}

func mustBytes(b []byte, err error) []byte {
	if err != nil {
		return nil
	}
	return b
}

// Releases lists every release of name the channel holds (all names when
// name is empty), ordered by name then version.
func (c *Channel) Releases(name string) ([]Entry, error) {
	return entries(c.targets, func(rel string) ([]byte, error) { return c.src.Read("targets/" + rel) }, name)
}

// entries reads and checks every target record (of name, when set).
func entries(targets *metadata.Metadata[metadata.TargetsType], read func(string) ([]byte, error), name string) ([]Entry, error) {
	var out []Entry
	for p, tf := range targets.Signed.Targets {
		dir, _ := path.Split(p)
		if name != "" && dir != name+"/" {
			continue
		}
		b, err := read(p)
		if err != nil {
			return nil, refuse("release record %s: %v", p, err)
		}
		if err := tf.VerifyLengthHashes(b); err != nil {
			return nil, refuse("release record %s does not match its signed length and hash: %v", p, err)
		}
		rec, err := parseRecord(b)
		if err != nil {
			return nil, refuse("%s: %v", p, err)
		}
		if targetPath(rec.Name, rec.Version) != p {
			return nil, refuse("release record %s names %s %s: a record must live at NAME/VERSION.json", p, rec.Name, rec.Version)
		}
		out = append(out, Entry{Record: *rec, Withdrawn: withdrawalOf(tf)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Record.Name != out[j].Record.Name {
			return out[i].Record.Name < out[j].Record.Name
		}
		return CompareVersions(out[i].Record.Version, out[j].Record.Version) < 0
	})
	return out, nil
}

// Query says which release of a name is acceptable.
type Query struct {
	Name string
	// Version pins an exact version (it must be listed and not
	// withdrawn). Without it the name's current release is wanted: the
	// highest version not withdrawn.
	Version string
	// MinVersion, with the current release, also refuses a current
	// release below it (a channel frozen or rolled back to older
	// releases, seen by a client with no state).
	MinVersion string
}

// Selection is the release a query accepts, with what the channel said.
type Selection struct {
	Record  Record `json:"record"`
	Current string `json:"current"`
	Status  Status `json:"channel"`
}

// Select returns the release the query accepts.
func (c *Channel) Select(q Query) (*Selection, error) {
	if err := CheckName(q.Name); err != nil {
		return nil, refuse("%v", err)
	}
	for _, v := range []string{q.Version, q.MinVersion} {
		if v != "" {
			if err := CheckVersion(v); err != nil {
				return nil, refuse("%v", err)
			}
		}
	}
	if q.Version != "" && q.MinVersion != "" {
		return nil, refuse("give a version or a minimum version, not both")
	}
	all, err := c.Releases(q.Name)
	if err != nil {
		return nil, err
	}
	var current *Entry
	byVersion := map[string]*Entry{}
	for i := range all {
		e := &all[i]
		byVersion[e.Record.Version] = e
		if e.Withdrawn == nil {
			current = e // sorted ascending: the last one not withdrawn
		}
	}
	sel := &Selection{Status: c.Status}
	if current != nil {
		sel.Current = current.Record.Version
	}
	if q.Version != "" {
		e, ok := byVersion[q.Version]
		if !ok {
			return nil, refuse("%s %s is not published in the channel (current: %s)", q.Name, q.Version, orNone(sel.Current))
		}
		if e.Withdrawn != nil {
			return nil, refuse("%s %s was withdrawn on %s: %s", q.Name, q.Version, e.Withdrawn.WithdrawnAt.Format(time.RFC3339), e.Withdrawn.Reason)
		}
		sel.Record = e.Record
		return sel, nil
	}
	if current == nil {
		if len(all) > 0 {
			return nil, refuse("every release of %s in the channel is withdrawn", q.Name)
		}
		return nil, refuse("the channel publishes no release named %s", q.Name)
	}
	if q.MinVersion != "" && CompareVersions(current.Record.Version, q.MinVersion) < 0 {
		return nil, refuse("the current release of %s is %s, below the minimum %s (a frozen or rolled-back channel)", q.Name, current.Record.Version, q.MinVersion)
	}
	sel.Record = current.Record
	return sel, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Match checks that a verified release is the selected one: the same
// image (or, inside a running image that knows no manifest digest, the
// same release descriptor) signed by the key the channel recorded.
func (s *Selection) Match(imageDigest, descriptorDigest, keyID string) error {
	r := s.Record
	if imageDigest != "" && imageDigest != r.ImageDigest {
		return refuse("the release is image %s, but the channel's %s %s is %s%s", imageDigest, r.Name, r.Version, r.ImageDigest, s.staleHint())
	}
	if descriptorDigest != r.DescriptorDigest {
		return refuse("the release descriptor is %s, but the channel's %s %s has %s%s", descriptorDigest, r.Name, r.Version, r.DescriptorDigest, s.staleHint())
	}
	if keyID != r.KeyID {
		return refuse("the release is signed by key %s, but the channel recorded key %s for %s %s", keyID, r.KeyID, r.Name, r.Version)
	}
	return nil
}

func (s *Selection) staleHint() string {
	if s.Record.Version == s.Current {
		return " (an older or other release under this name is not the current one)"
	}
	return ""
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
