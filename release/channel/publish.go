package channel

import (
	"bytes"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/internal/writerlock"
)

// Roles a key can hold. The online key signs both snapshot and timestamp.
const (
	RoleRoot    = "root"
	RoleTargets = "targets"
	RoleOnline  = "online"
)

// signedAtField is an extra field of the signed timestamp: when it was
// signed, so a consumer can say how old the channel's view is (TUF
// metadata carries only an expiry).
const signedAtField = "cacheon_signed_at"

// Keys are the private keys an operation needs; the rest may be nil.
type Keys struct {
	Root    crypto.Signer
	Targets crypto.Signer
	Online  crypto.Signer
}

// Expiry is how long each role's metadata stays valid after signing.
type Expiry struct {
	Root, Targets, Snapshot, Timestamp time.Duration
}

// DefaultExpiry: the root for a year, the release list for 90 days, the
// snapshot for a week and the timestamp for a day (refresh it daily).
var DefaultExpiry = Expiry{
	Root:      365 * 24 * time.Hour,
	Targets:   90 * 24 * time.Hour,
	Snapshot:  7 * 24 * time.Hour,
	Timestamp: 24 * time.Hour,
}

// Repo is a channel's metadata as its publisher holds it.
type Repo struct {
	dir       string
	now       time.Time
	expiry    Expiry
	root      *metadata.Metadata[metadata.RootType]
	targets   *metadata.Metadata[metadata.TargetsType]
	snapshot  *metadata.Metadata[metadata.SnapshotType]
	timestamp *metadata.Metadata[metadata.TimestampType]
	// files to write, in order, when the operation commits
	pending []pendingFile
	// lock is the channel's writer lock, held from OpenWriter to Close.
	lock *writerlock.Lock
	// rootBehind: root.json is older than the newest N.root.json, which
	// Open walked to (a rotation killed between the two); rootBytes is
	// that root's file, which the next commit writes to root.json.
	rootBehind bool
	rootBytes  []byte
	// prevRoot is the root before r.root, read when a role's metadata
	// does not verify against r.root.
	prevRoot *metadata.Metadata[metadata.RootType]
	// staleSigned names the roles whose metadata is still signed by the
	// key the previous root named: a rotation of that role killed before
	// it re-signed them. Consumers refuse the channel until a write signs
	// them with the new key.
	staleSigned map[string]bool
	// fault, when set, is called at each step of each file write (see
	// WriteSteps). Only the crash tests set it, to kill the writer there.
	fault func(step string)
}

// WriteSteps are the steps of writing one channel file, in order. A
// writer reaches FILE:STEP for each file it writes (FILE its name in the
// channel, as 2.root.json or targets/NAME/VERSION.json): before anything
// of the file is written, once its temporary file is written and synced,
// once it is renamed into place, and once the directory is synced.
var WriteSteps = append([]string{"before"}, atomicwrite.FileSteps...)

// ErrLocked is the error of a publisher that finds another writer at the
// channel: every write (init, publish, withdraw, refresh, rotate) holds
// the channel's writer lock, so two of them never interleave and one's
// release is never lost to the other's.
var ErrLocked = errors.New("release channel is locked by another writer")

// LockPath is the writer lock of the channel in dir: a file beside the
// directory, never in it, so nothing of it is served with the channel.
func LockPath(dir string) string { return filepath.Clean(dir) + ".lock" }

// lockChannel takes the writer lock of the channel in dir.
func lockChannel(dir string) (*writerlock.Lock, error) {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return nil, err
	}
	lock, err := writerlock.Acquire(LockPath(dir))
	var held *writerlock.HeldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("%s: %w: %s", dir, ErrLocked, held)
	}
	return lock, err
}

// OpenWriter is Open for a publisher: it takes the channel's writer lock
// first and holds it until Close, so what the operation read is still the
// channel when it commits.
func OpenWriter(dir string, now time.Time, expiry Expiry) (*Repo, error) {
	lock, err := lockChannel(dir)
	if err != nil {
		return nil, err
	}
	r, err := Open(dir, now, expiry)
	if err != nil {
		lock.Release()
		return nil, err
	}
	r.lock = lock
	return r, nil
}

// Close releases the writer lock of a Repo from OpenWriter; it is a no-op
// for one from Open.
func (r *Repo) Close() error { return r.lock.Release() }

type pendingFile struct {
	rel  string
	data []byte
}

func tufSigner(s crypto.Signer) (signature.Signer, error) {
	if s == nil {
		return nil, errors.New("no key given")
	}
	return signature.LoadSigner(s, crypto.SHA256)
}

func tufKey(s crypto.Signer) (*metadata.Key, string, error) {
	k, err := metadata.KeyFromPublicKey(s.Public())
	if err != nil {
		return nil, "", err
	}
	id, err := k.ID()
	if err != nil {
		return nil, "", err
	}
	return k, id, nil
}

// Init creates a channel in dir (which must not hold one): root version 1
// naming the three keys, an empty release list, snapshot and timestamp.
func Init(dir string, keys Keys, now time.Time, expiry Expiry) error {
	return initChannel(dir, keys, now, expiry, nil)
}

// initChannel is Init with the crash tests' fault hook.
func initChannel(dir string, keys Keys, now time.Time, expiry Expiry, fault func(string)) error {
	if keys.Root == nil || keys.Targets == nil || keys.Online == nil {
		return reject.New("channel init needs the root, targets and online keys")
	}
	lock, err := lockChannel(dir)
	if err != nil {
		return err
	}
	defer lock.Release()
	// timestamp.json is written last: a directory with it holds a channel
	// consumers may have seen, and init never replaces one. Without it,
	// whatever is there is an init that was killed part-way (never a
	// channel), and init starts again over it.
	if _, err := os.Stat(filepath.Join(dir, "timestamp.json")); err == nil {
		return reject.Errorf("%s already holds a channel (timestamp.json exists)", dir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	now = now.UTC().Truncate(time.Second)
	root := metadata.Root(now.Add(expiry.Root))
	root.Signed.ConsistentSnapshot = false
	for _, rk := range []struct {
		key   crypto.Signer
		roles []string
	}{
		{keys.Root, []string{metadata.ROOT}},
		{keys.Targets, []string{metadata.TARGETS}},
		{keys.Online, []string{metadata.SNAPSHOT, metadata.TIMESTAMP}},
	} {
		k, _, err := tufKey(rk.key)
		if err != nil {
			return reject.Errorf("channel key: %w", err)
		}
		for _, role := range rk.roles {
			if err := root.Signed.AddKey(k, role); err != nil {
				return err
			}
		}
	}
	r := &Repo{
		dir: dir, now: now, expiry: expiry, root: root,
		targets:   metadata.Targets(now.Add(expiry.Targets)),
		snapshot:  metadata.Snapshot(now.Add(expiry.Snapshot)),
		timestamp: metadata.Timestamp(now.Add(expiry.Timestamp)),
		fault:     fault,
	}
	if err := r.signRoot(keys.Root); err != nil {
		return err
	}
	if err := r.signTargets(keys.Targets, false); err != nil {
		return err
	}
	if err := r.signSnapshotAndTimestamp(keys.Online, false); err != nil {
		return err
	}
	return r.commit()
}

// Open reads the channel in dir for an operation at now, checking every
// role's metadata against the root as a client would, so a publisher never
// extends a channel it could not itself verify.
func Open(dir string, now time.Time, expiry Expiry) (*Repo, error) {
	r := &Repo{dir: dir, now: now.UTC().Truncate(time.Second), expiry: expiry}
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, reject.Errorf("%s holds no channel: %s is missing (cacheon release channel init)", dir, name)
		}
		return b, err
	}
	var err error
	var b []byte
	if b, err = read("root.json"); err != nil {
		return nil, err
	}
	if r.root, err = metadata.Root().FromBytes(b); err != nil {
		return nil, reject.Errorf("%s: root.json: %w", dir, err)
	}
	if err := r.walkRoots(); err != nil {
		return nil, err
	}
	if b, err = read("targets.json"); err != nil {
		return nil, err
	}
	if r.targets, err = metadata.Targets().FromBytes(b); err != nil {
		return nil, reject.Errorf("%s: targets.json: %w", dir, err)
	}
	if b, err = read("snapshot.json"); err != nil {
		return nil, err
	}
	if r.snapshot, err = metadata.Snapshot().FromBytes(b); err != nil {
		return nil, reject.Errorf("%s: snapshot.json: %w", dir, err)
	}
	if b, err = read("timestamp.json"); err != nil {
		return nil, err
	}
	if r.timestamp, err = metadata.Timestamp().FromBytes(b); err != nil {
		return nil, reject.Errorf("%s: timestamp.json: %w", dir, err)
	}
	if err := r.root.VerifyDelegate(metadata.ROOT, r.root); err != nil {
		return nil, reject.Errorf("%s: root version %d is not signed by its own root keys: %w", dir, r.root.Signed.Version, err)
	}
	r.staleSigned = map[string]bool{}
	for role, md := range map[string]any{metadata.TARGETS: r.targets, metadata.SNAPSHOT: r.snapshot, metadata.TIMESTAMP: r.timestamp} {
		err := r.root.VerifyDelegate(role, md)
		if err == nil {
			continue
		}
		// A rotation of this role's key, killed after it wrote the new
		// root and before it re-signed the role's metadata, leaves the
		// metadata signed by the key the previous root named: authentic,
		// and what the next write re-signs with the new key. Refusing it
		// would leave a channel no writer can open, so no writer could
		// ever finish the rotation.
		if prev, perr := r.previousRoot(); perr == nil && prev != nil && prev.VerifyDelegate(role, md) == nil {
			r.staleSigned[role] = true
			continue
		}
		return nil, reject.Errorf("%s: %s.json does not verify against root version %d: %w", dir, role, r.root.Signed.Version, err)
	}
	return r, nil
}

// walkRoots moves r.root on from root.json to the newest N.root.json
// that chains from it (signed by the previous root's keys and its own),
// as a consumer walks: a rotation killed after writing N.root.json and
// before root.json has shown consumers root N already, so every writer
// goes on from it, never from the root it replaced.
func (r *Repo) walkRoots() error {
	for {
		name := itoa(r.root.Signed.Version+1) + ".root.json"
		b, err := os.ReadFile(filepath.Join(r.dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		next, err := metadata.Root().FromBytes(b)
		if err != nil {
			return reject.Errorf("%s: %s: %w", r.dir, name, err)
		}
		if next.Signed.Version != r.root.Signed.Version+1 {
			return reject.Errorf("%s: %s holds root version %d", r.dir, name, next.Signed.Version)
		}
		if err := r.root.VerifyDelegate(metadata.ROOT, next); err != nil {
			return reject.Errorf("%s: %s is not signed by root version %d's keys: %w", r.dir, name, r.root.Signed.Version, err)
		}
		if err := next.VerifyDelegate(metadata.ROOT, next); err != nil {
			return reject.Errorf("%s: %s is not signed by its own root keys: %w", r.dir, name, err)
		}
		r.prevRoot, r.root, r.rootBytes, r.rootBehind = r.root, next, b, true
	}
}

// previousRoot is the root before r.root (nil for the first), checked to
// chain to it.
func (r *Repo) previousRoot() (*metadata.Metadata[metadata.RootType], error) {
	if r.prevRoot != nil || r.root.Signed.Version <= 1 {
		return r.prevRoot, nil
	}
	b, err := os.ReadFile(filepath.Join(r.dir, itoa(r.root.Signed.Version-1)+".root.json"))
	if err != nil {
		return nil, err
	}
	prev, err := metadata.Root().FromBytes(b)
	if err != nil {
		return nil, err
	}
	if err := prev.VerifyDelegate(metadata.ROOT, r.root); err != nil {
		return nil, err
	}
	r.prevRoot = prev
	return prev, nil
}

// signAs signs md (the metadata of role) with key, checks that the
// channel's root accepts the signature for that role, so a wrong key is
// refused before anything is written, and returns the file's bytes.
// keyName is the key's name in this package (targets, online).
func signAs[T metadata.Roles](r *Repo, md *metadata.Metadata[T], key crypto.Signer, role, keyName string) ([]byte, error) {
	s, err := tufSigner(key)
	if err != nil {
		return nil, reject.Errorf("sign %s: %w", role, err)
	}
	md.ClearSignatures()
	if _, err := md.Sign(s); err != nil {
		return nil, fmt.Errorf("sign %s: %w", role, err)
	}
	if err := r.root.VerifyDelegate(role, md); err != nil {
		return nil, reject.Errorf("the %s key given is not the channel's %s key: %w", keyName, role, err)
	}
	return md.ToBytes(true)
}

// signRoot signs the root with every key given (a rotation signs with the
// old and the new root keys) and queues N.root.json and root.json.
func (r *Repo) signRoot(keys ...crypto.Signer) error {
	r.root.ClearSignatures()
	for _, k := range keys {
		s, err := tufSigner(k)
		if err != nil {
			return reject.Errorf("sign root: %w", err)
		}
		if _, err := r.root.Sign(s); err != nil {
			return fmt.Errorf("sign root: %w", err)
		}
	}
	if err := r.root.VerifyDelegate(metadata.ROOT, r.root); err != nil {
		return reject.Errorf("root version %d is not signed by its own root keys: %w", r.root.Signed.Version, err)
	}
	b, err := r.root.ToBytes(true)
	if err != nil {
		return err
	}
	r.pending = append(r.pending, pendingFile{itoa(r.root.Signed.Version) + ".root.json", b}, pendingFile{"root.json", b})
	return nil
}

// signTargets signs the release list (a new version when bump) and
// records it in the snapshot.
func (r *Repo) signTargets(key crypto.Signer, bump bool) error {
	if bump {
		r.targets.Signed.Version++
	}
	r.targets.Signed.Expires = r.now.Add(r.expiry.Targets)
	b, err := signAs(r, r.targets, key, metadata.TARGETS, RoleTargets)
	if err != nil {
		return err
	}
	r.snapshot.Signed.Meta["targets.json"] = metadata.MetaFile(r.targets.Signed.Version)
	r.pending = append(r.pending, pendingFile{"targets.json", b})
	return nil
}

// signSnapshotAndTimestamp signs a new snapshot and a timestamp naming it
// (new versions when bump).
func (r *Repo) signSnapshotAndTimestamp(key crypto.Signer, bump bool) error {
	if bump {
		r.snapshot.Signed.Version++
		r.timestamp.Signed.Version++
	}
	// The snapshot names the release list the repo holds: the one on disk,
	// which Open checked against the root, or the one just signed. A
	// publish killed after writing targets.json and before snapshot.json
	// left a snapshot naming the previous list; this repairs it.
	r.snapshot.Signed.Meta["targets.json"] = metadata.MetaFile(r.targets.Signed.Version)
	r.snapshot.Signed.Expires = r.now.Add(r.expiry.Snapshot)
	snap, err := signAs(r, r.snapshot, key, metadata.SNAPSHOT, RoleOnline)
	if err != nil {
		return err
	}
	meta := metadata.MetaFile(r.snapshot.Signed.Version)
	meta.Length = int64(len(snap))
	meta.Hashes = metadata.Hashes{"sha256": sha256Sum(snap)}
	r.timestamp.Signed.Meta["snapshot.json"] = meta
	r.timestamp.Signed.Expires = r.now.Add(r.expiry.Timestamp)
	if r.timestamp.Signed.UnrecognizedFields == nil {
		r.timestamp.Signed.UnrecognizedFields = map[string]any{}
	}
	r.timestamp.Signed.UnrecognizedFields[signedAtField] = r.now.Format(time.RFC3339)
	ts, err := signAs(r, r.timestamp, key, metadata.TIMESTAMP, RoleOnline)
	if err != nil {
		return err
	}
	r.pending = append(r.pending, pendingFile{"snapshot.json", snap}, pendingFile{"timestamp.json", ts})
	return nil
}

// commit writes the queued files in order, each atomically: release
// records first, then root, targets, snapshot and the timestamp last, so a
// reader sees either the old channel or one whose every file is in place.
func (r *Repo) commit() error {
	if err := r.checkAsConsumer(); err != nil {
		return err
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return err
	}
	if r.rootBehind && !r.pendingHas("root.json") {
		// root.json, the publisher's copy of the newest root (consumers
		// walk N.root.json), catches up with a rotation killed before it.
		r.pending = append([]pendingFile{{"root.json", r.rootBytes}}, r.pending...)
	}
	for _, f := range r.pending {
		p := filepath.Join(r.dir, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		r.step(f.rel + ":before")
		if err := atomicwrite.WriteFileWith(p, f.data, 0o644, atomicwrite.Steps(func(s string) { r.step(f.rel + ":" + s) })); err != nil {
			return fmt.Errorf("write channel file %s: %w", f.rel, err)
		}
	}
	r.pending = nil
	r.rootBehind = false
	return nil
}

func (r *Repo) pendingHas(rel string) bool {
	for _, f := range r.pending {
		if f.rel == rel {
			return true
		}
	}
	return false
}

func (r *Repo) step(s string) {
	if r.fault != nil {
		r.fault(s)
	}
}

// pendingSource is the channel as commit would leave it: the pending
// files over the directory's.
type pendingSource struct {
	dir     Dir
	pending map[string][]byte
}

func (p pendingSource) Read(name string) ([]byte, error) {
	if b, ok := p.pending[name]; ok {
		return b, nil
	}
	return p.dir.Read(name)
}

func (p pendingSource) String() string { return string(p.dir) }

// checkAsConsumer runs the consumer's check (Load, from the channel's
// first root, at the operation's time) over the channel as the pending
// writes would leave it, and refuses the operation before anything is
// written when a consumer would refuse the result: a publisher never
// exits 0 onto a channel its consumers refuse (a root signed by a key the
// previous root does not name, say).
func (r *Repo) checkAsConsumer() error {
	src := pendingSource{dir: Dir(r.dir), pending: map[string][]byte{}}
	for _, f := range r.pending {
		src.pending[f.rel] = f.data
	}
	first, err := src.Read("1.root.json")
	if err != nil {
		return fmt.Errorf("%s: the channel's first root: %w", r.dir, err)
	}
	if _, err := Load(Options{Source: src, TrustedRoot: first, Now: r.now}); err != nil {
		return reject.Errorf("%s: nothing written: consumers would refuse the channel this leaves: %w", r.dir, err)
	}
	return nil
}

// Publish adds a release to the channel. Publishing the same record again
// is a no-op; another record under a published name and version, or a
// withdrawn one, is refused: a version names one image forever.
func (r *Repo) Publish(rec Record, keys Keys) error {
	rec.Type = RecordType
	if rec.PublishedAt.IsZero() {
		rec.PublishedAt = r.now
	}
	if err := rec.Validate(); err != nil {
		return reject.Errorf("release record: %w", err)
	}
	data, err := rec.marshal()
	if err != nil {
		return err
	}
	path := targetPath(rec.Name, rec.Version)
	if old, ok := r.targets.Signed.Targets[path]; ok {
		if w := withdrawalOf(old); w != nil {
			return reject.Errorf("%s %s was withdrawn on %s (%s) and cannot be published again: publish a new version", rec.Name, rec.Version, w.WithdrawnAt.Format(time.RFC3339), w.Reason)
		}
		prev, err := os.ReadFile(filepath.Join(r.dir, "targets", filepath.FromSlash(path)))
		if err != nil {
			return fmt.Errorf("read the published record of %s %s: %w", rec.Name, rec.Version, err)
		}
		if prevRec, perr := parseRecord(prev); perr == nil && prevRec.ImageDigest == rec.ImageDigest && prevRec.DescriptorDigest == rec.DescriptorDigest && prevRec.KeyID == rec.KeyID {
			// Published already. A publish killed part-way leaves the
			// record and the release list written and the snapshot or
			// timestamp not: consumers refuse that channel, and the same
			// publish again finishes it.
			if r.checkAsConsumer() != nil {
				return r.Refresh(keys)
			}
			return nil
		}
		return reject.Errorf("%s %s is already published with another image: a version names one image forever, publish a new version", rec.Name, rec.Version)
	}
	// One image, one version: the same image under a second version would
	// stay current as the first when the second is withdrawn.
	published, err := r.Releases()
	if err != nil {
		return err
	}
	for _, e := range published {
		if e.Record.Name == rec.Name && e.Record.ImageDigest == rec.ImageDigest {
			return reject.Errorf("%s %s: image %s is already published as %s %s: an image has one version; withdrawing one of two would leave it current as the other", rec.Name, rec.Version, rec.ImageDigest, e.Record.Name, e.Record.Version)
		}
	}
	tf, err := metadata.TargetFile().FromBytes(path, data, "sha256")
	if err != nil {
		return err
	}
	r.targets.Signed.Targets[path] = tf
	r.pending = append(r.pending, pendingFile{"targets/" + path, data})
	return r.commitTargets(keys)
}

// Withdraw marks a published release withdrawn: consumers refuse it from
// the next timestamp on. The record stays, so they can say why.
func (r *Repo) Withdraw(name, version, reason string, keys Keys) error {
	if err := CheckName(name); err != nil {
		return reject.Wrap(err)
	}
	if err := CheckVersion(version); err != nil {
		return reject.Wrap(err)
	}
	if reason == "" {
		return reject.New("a withdrawal needs a reason (--reason), shown to every consumer it refuses")
	}
	tf, ok := r.targets.Signed.Targets[targetPath(name, version)]
	if !ok {
		return reject.Errorf("%s %s is not published in this channel", name, version)
	}
	if w := withdrawalOf(tf); w != nil {
		// A withdrawal killed after writing targets.json left the channel
		// refused by consumers: the same withdrawal again finishes it.
		if w.Reason == reason && r.checkAsConsumer() != nil {
			return r.Refresh(keys)
		}
		return reject.Errorf("%s %s was already withdrawn on %s", name, version, w.WithdrawnAt.Format(time.RFC3339))
	}
	c, err := json.Marshal(targetCustom{Withdrawn: &Withdrawal{WithdrawnAt: r.now, Reason: reason}})
	if err != nil {
		return err
	}
	raw := json.RawMessage(c)
	tf.Custom = &raw
	return r.commitTargets(keys)
}

func (r *Repo) commitTargets(keys Keys) error {
	if err := r.signTargets(keys.Targets, true); err != nil {
		return err
	}
	if err := r.signSnapshotAndTimestamp(keys.Online, true); err != nil {
		return err
	}
	return r.commit()
}

// Refresh signs a new snapshot and timestamp with fresh expiries: the
// scheduled job that keeps consumers accepting the channel.
func (r *Repo) Refresh(keys Keys) error {
	if r.staleSigned[metadata.TARGETS] {
		return reject.Errorf("%s: a rotation of the targets key was killed part-way: targets.json is still signed by the retired key, and refresh signs only the snapshot and timestamp; run the same rotation again (channel rotate --role targets with the same new key), or publish with the new targets key", r.dir)
	}
	if err := r.signSnapshotAndTimestamp(keys.Online, true); err != nil {
		return err
	}
	return r.commit()
}

// Rotate replaces the key of role (root, targets or online) with newKey
// through a new root version signed by the current root key and, for the
// root role, the new one as well; the metadata the replaced key signed is
// signed again with the new key. keys.Root is the current root key;
// keys.Targets and keys.Online are needed to re-sign what they sign
// (for the rotated role, newKey takes its place).
func (r *Repo) Rotate(role string, newKey crypto.Signer, keys Keys) error {
	if keys.Root == nil {
		return reject.New("a key rotation needs the current root key")
	}
	if newKey == nil {
		return reject.New("a key rotation needs the new key")
	}
	var tufRoles []string
	switch role {
	case RoleRoot:
		tufRoles = []string{metadata.ROOT}
	case RoleTargets:
		tufRoles = []string{metadata.TARGETS}
		keys.Targets = newKey
	case RoleOnline:
		tufRoles = []string{metadata.SNAPSHOT, metadata.TIMESTAMP}
		keys.Online = newKey
	default:
		return reject.Errorf("role %q: want root, targets or online", role)
	}
	k, id, err := tufKey(newKey)
	if err != nil {
		return reject.Errorf("new key: %w", err)
	}
	if err := r.root.VerifyDelegate(metadata.ROOT, r.root); err != nil {
		return err
	}
	if slices.Contains(r.root.Signed.Roles[tufRoles[0]].KeyIDs, id) {
		// The same rotation again. When the first was killed after it
		// wrote the new root and before the new snapshot and timestamp,
		// consumers refuse the channel: finish it by signing what is not
		// yet signed with the role's key now, then the snapshot and
		// timestamp. Otherwise it is done.
		if r.checkAsConsumer() == nil {
			return reject.Errorf("the new key %s already holds the %s role", id, role)
		}
		if r.staleSigned[metadata.TARGETS] {
			if err := r.signTargets(keys.Targets, true); err != nil {
				return err
			}
		}
		if err := r.signSnapshotAndTimestamp(keys.Online, true); err != nil {
			return err
		}
		return r.commit()
	}
	oldRoot := keys.Root
	for _, tr := range tufRoles {
		for _, old := range append([]string(nil), r.root.Signed.Roles[tr].KeyIDs...) {
			if err := r.root.Signed.RevokeKey(old, tr); err != nil {
				return err
			}
		}
		if err := r.root.Signed.AddKey(k, tr); err != nil {
			return err
		}
	}
	r.root.Signed.Version++
	r.root.Signed.Expires = r.now.Add(r.expiry.Root)
	signers := []crypto.Signer{oldRoot}
	if role == RoleRoot {
		signers = append(signers, newKey)
	}
	// The new root must be signed by the old root's keys (the client checks
	// it against the root it trusts) and by its own.
	if err := r.signRoot(signers...); err != nil {
		return err
	}
	if role == RoleRoot {
		// Only the root's own keys changed: targets, snapshot and
		// timestamp stay as they are, valid under the new root. The new
		// N.root.json is then the one file of the rotation a consumer
		// reads, so a crash leaves it the old root or the new, never a
		// refused channel (and the rotation needs no other key).
		return r.commit()
	}
	if err := r.signTargets(keys.Targets, true); err != nil {
		return err
	}
	if err := r.signSnapshotAndTimestamp(keys.Online, true); err != nil {
		return err
	}
	return r.commit()
}

// Releases lists the records the publisher holds, for `channel show`.
func (r *Repo) Releases() ([]Entry, error) {
	return entries(r.targets, func(rel string) ([]byte, error) {
		return os.ReadFile(filepath.Join(r.dir, "targets", filepath.FromSlash(rel)))
	}, "")
}

// Now is the time the operation signs as of.
func (r *Repo) Now() time.Time { return r.now }

// Versions reports the role versions, for `channel show`.
func (r *Repo) Versions() (root, targets, snapshot, timestamp int64, timestampExpires time.Time) {
	return r.root.Signed.Version, r.targets.Signed.Version, r.snapshot.Signed.Version, r.timestamp.Signed.Version, r.timestamp.Signed.Expires
}

func withdrawalOf(tf *metadata.TargetFiles) *Withdrawal {
	if tf.Custom == nil {
		return nil
	}
	var c targetCustom
	dec := json.NewDecoder(bytes.NewReader(*tf.Custom))
	if err := dec.Decode(&c); err != nil {
		// Unreadable custom data on a signed target: treat it as
		// withdrawn rather than as a valid release.
		return &Withdrawal{Reason: "unreadable withdrawal record: " + err.Error()}
	}
	return c.Withdrawn
}
