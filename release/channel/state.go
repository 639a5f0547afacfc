package channel

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/trustedmetadata"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/writerlock"
)

// StateType is the type field of a channel state file.
const StateType = "cacheon.channel-state.v1"

// StateLockWait is how long a check waits for another check of the same
// channel to finish with the state file: checks are serialized so that
// one never overwrites a newer state with an older one.
var StateLockWait = 2 * time.Minute

// ErrStateLocked is the error of a check that waited StateLockWait for
// another check holding the channel's state lock.
var ErrStateLocked = errors.New("release channel state is locked by another check")

// state is what a consumer keeps of a channel between checks, in one file
// per trusted root key: the newest root it trusted (so a mirror that
// withholds a rotation cannot bring a retired key back) and the highest
// versions it accepted (so an older copy of the channel is refused).
type state struct {
	Type    string `json:"type"`
	Channel string `json:"channel"` // where it was checked last, for messages
	// CheckedAt is the check's clock when the state was written.
	CheckedAt        time.Time       `json:"checked_at"`
	RootVersion      int64           `json:"root_version"`
	TimestampVersion int64           `json:"timestamp_version"`
	SnapshotVersion  int64           `json:"snapshot_version"`
	TargetsVersion   int64           `json:"targets_version"`
	Root             json.RawMessage `json:"root"`
	Timestamp        json.RawMessage `json:"timestamp"`

	root      *metadata.Metadata[metadata.RootType]      // Root, parsed
	timestamp *metadata.Metadata[metadata.TimestampType] // Timestamp, parsed
}

var keyIDRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// StatePath is the state file of the channel whose trusted root is
// trustedRoot, under dir: DIR/<root key id>.json, named by the key that
// signs that root, so two channels never share a state (and one channel's
// state does not change when the consumer pins a newer root signed by the
// same key).
func StatePath(dir string, trustedRoot []byte) (string, error) {
	root, err := metadata.Root().FromBytes(trustedRoot)
	if err != nil {
		return "", refuse("trusted root: %v", err)
	}
	role := root.Signed.Roles[metadata.ROOT]
	if role == nil || len(role.KeyIDs) == 0 {
		return "", refuse("trusted root: roles.root names no key")
	}
	ids := slices.Clone(role.KeyIDs)
	slices.Sort(ids)
	name := ids[0]
	if len(ids) > 1 || !keyIDRE.MatchString(name) {
		// Several keys, or an id that is not a plain SHA-256: the file
		// is named by a digest of them, never by the root's own text.
		sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
		name = hex.EncodeToString(sum[:])
	}
	return filepath.Join(dir, name+".json"), nil
}

// stateFile is one channel's state file and its lock.
type stateFile struct {
	path string
	lock *writerlock.Lock
}

// openState takes the lock of the state file at path (waiting up to
// StateLockWait for another check of the channel) and reads it: nil when
// there is none yet. A state file that does not parse or check is an
// error naming it; it is never reset silently, since a reset is exactly
// what a rollback needs.
func openState(path string) (*stateFile, *state, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("channel state directory: %w", err)
	}
	lockPath := strings.TrimSuffix(path, ".json") + ".lock"
	deadline := time.Now().Add(StateLockWait)
	var lock *writerlock.Lock
	for {
		var err error
		lock, err = writerlock.Acquire(lockPath)
		if err == nil {
			break
		}
		var held *writerlock.HeldError
		if !errors.As(err, &held) {
			return nil, nil, fmt.Errorf("channel state %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("channel state %s: %w: waited %s: %s", path, ErrStateLocked, StateLockWait, held)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f := &stateFile{path: path, lock: lock}
	st, err := f.read()
	if err != nil {
		lock.Release()
		return nil, nil, err
	}
	return f, st, nil
}

func (f *stateFile) close() {
	if f != nil {
		f.lock.Release()
	}
}

// corrupt is the refusal of a state file that does not check.
func (f *stateFile) corrupt(format string, args ...any) error {
	return refuse("channel state %s: %s; this file is this machine's record of the channel, so it is not replaced: find out what changed it, and remove it only to trust the channel again from --channel-root alone", f.path, fmt.Sprintf(format, args...))
}

func (f *stateFile) read() (*state, error) {
	info, err := os.Lstat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("channel state: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, f.corrupt("not a regular file (%s)", info.Mode().Type())
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("channel state: %w", err)
	}
	if len(b) > MaxFileBytes {
		return nil, f.corrupt("larger than %d bytes", MaxFileBytes)
	}
	var st state
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, f.corrupt("does not parse: %v", err)
	}
	if dec.More() {
		return nil, f.corrupt("trailing data after the JSON object")
	}
	if st.Type != StateType {
		return nil, f.corrupt("field type is %q, want %q", st.Type, StateType)
	}
	for _, v := range []struct {
		field string
		n     int64
	}{{"root_version", st.RootVersion}, {"timestamp_version", st.TimestampVersion}, {"snapshot_version", st.SnapshotVersion}, {"targets_version", st.TargetsVersion}} {
		if v.n < 1 {
			return nil, f.corrupt("field %s is %d, want a version of at least 1", v.field, v.n)
		}
	}
	// The root must still be a root signed by its own keys: it is where
	// the next check starts.
	trusted, err := trustedmetadata.New(st.Root)
	if err != nil {
		return nil, f.corrupt("field root is not a root signed by its own keys: %v", err)
	}
	st.root = trusted.Root
	if st.root.Signed.Version != st.RootVersion {
		return nil, f.corrupt("field root is version %d, but root_version says %d", st.root.Signed.Version, st.RootVersion)
	}
	if st.timestamp, err = metadata.Timestamp().FromBytes(st.Timestamp); err != nil {
		return nil, f.corrupt("field timestamp does not parse: %v", err)
	}
	if st.timestamp.Signed.Version != st.TimestampVersion {
		return nil, f.corrupt("field timestamp is version %d, but timestamp_version says %d", st.timestamp.Signed.Version, st.TimestampVersion)
	}
	return &st, nil
}

// write replaces the state file atomically (a synced temporary file
// renamed over it), under the lock openState took.
func (f *stateFile) write(st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicwrite.WriteFile(f.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save channel state: %w", err)
	}
	return nil
}

// sameKeys says whether two roots give a role the same keys: when they
// differ the role's key was rotated, and the versions it signed before are
// no floor for the new key's (TUF's fast-forward attack recovery: a
// compromised key may have pushed them arbitrarily high).
func sameKeys(a, b *metadata.Metadata[metadata.RootType], role string) bool {
	ra, rb := a.Signed.Roles[role], b.Signed.Roles[role]
	if ra == nil || rb == nil {
		return false
	}
	x, y := slices.Clone(ra.KeyIDs), slices.Clone(rb.KeyIDs)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// sameSigned says whether two timestamps of one version say the same
// thing (their signed parts), whatever their bytes' formatting.
func sameSigned(a, b *metadata.Metadata[metadata.TimestampType]) bool {
	ja, err1 := json.Marshal(a.Signed)
	jb, err2 := json.Marshal(b.Signed)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
