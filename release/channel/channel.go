// Package channel is the signed release channel: a TUF repository
// (go-tuf's metadata, spec 1.0) whose targets are release records, one per
// published release (name, version, image digest, descriptor digest,
// signing key and publication time).
//
// The channel answers what a signature alone cannot:
//   - freshness: the timestamp role's metadata expires within a day (by
//     default), so a mirror frozen in time, or a channel nobody maintains,
//     is refused once it expires;
//   - rollback: a consumer's check asks for the name's current release (or
//     a pinned version), so an older signed release re-tagged as the latest
//     is refused; with state (one file per trusted root key) the consumer
//     also keeps the newest root and the highest versions it accepted, and
//     a channel rolled back to older metadata, or one withholding a root
//     rotation, is refused;
//   - revocation: a withdrawn release stays listed, marked withdrawn with
//     its reason, and is refused by name;
//   - key retirement: the record says when the release was published, and
//     the release signature's key validity is judged at that time, so
//     retiring a release key does not invalidate the releases it signed
//     while it was valid;
//   - key rotation: through new root metadata, signed by the old and the new
//     root keys, that clients walk version by version.
//
// The repository is a directory of plain files (consistent_snapshot off):
// root.json and N.root.json for every root version, timestamp.json,
// snapshot.json, targets.json and targets/NAME/VERSION.json. Serve it over
// HTTP or copy it anywhere; the consumer reads it through a Source.
//
// Three keys sign it: the root key (kept offline; it certifies the
// others), the targets key (signs the list of releases) and the online key
// (signs snapshot and timestamp, refreshed by a scheduled job).
//
// This package is not on the offline verification path (release/verify
// and release/entrypoint never import it): trust in a release still comes
// from the consumer's key policy; the channel only narrows which signed
// releases are acceptable and when.
package channel

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cacheon/engine/internal/reject"
)

// RecordType is the type field of a release record.
const RecordType = "cacheon.channel-release.v1"

// Record is one published release: the bytes of a channel target.
type Record struct {
	Type             string    `json:"type"`
	Name             string    `json:"name"`
	Version          string    `json:"version"`
	ImageDigest      string    `json:"image_digest"`      // sha256:<hex> of the image manifest
	DescriptorDigest string    `json:"descriptor_digest"` // <hex> SHA-256 of release.json, as verify reports it
	KeyID            string    `json:"key_id"`
	PublishedAt      time.Time `json:"published_at"`
}

// Withdrawal marks a target withdrawn (its custom metadata in targets.json).
type Withdrawal struct {
	WithdrawnAt time.Time `json:"withdrawn_at"`
	Reason      string    `json:"reason"`
}

// targetCustom is the custom object of a channel target.
type targetCustom struct {
	Withdrawn *Withdrawal `json:"withdrawn,omitempty"`
}

// ErrChannel is wrapped by every refusal the channel check makes; it is a
// rejection (exit 2): the channel's content is untrusted input.
var ErrChannel = errors.New("release channel")

func refuse(format string, args ...any) error {
	return reject.Wrap(fmt.Errorf("%w: %s", ErrChannel, fmt.Sprintf(format, args...)))
}

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
	versionRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	digestRE  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	hexRE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// CheckName checks a release name: lower-case letters, digits, '.', '_'
// and '-', starting with a letter or digit (an image repository's last
// component, e.g. cacheon-engine).
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("name %q: want lower-case letters, digits, '.', '_' or '-', starting with a letter or digit, at most 128 characters", name)
	}
	return nil
}

// CheckVersion checks a semantic version MAJOR.MINOR.PATCH with an
// optional pre-release (1.2.0, 0.1.0-demo); build metadata is not allowed,
// since it would make two spellings of one precedence.
func CheckVersion(v string) error {
	if !versionRE.MatchString(v) {
		return fmt.Errorf("version %q: want a semantic version MAJOR.MINOR.PATCH[-PRERELEASE], e.g. 1.2.0 or 0.1.0-rc.1", v)
	}
	return nil
}

// CompareVersions orders two valid versions by semantic-version precedence
// (-1, 0 or 1): numeric fields numerically, a pre-release below its
// release, pre-release identifiers numeric-before-alphanumeric.
func CompareVersions(a, b string) int {
	ac, ap, _ := strings.Cut(a, "-")
	bc, bp, _ := strings.Cut(b, "-")
	as, bs := strings.Split(ac, "."), strings.Split(bc, ".")
	for i := 0; i < 3; i++ {
		if c := compareNumeric(as[i], bs[i]); c != 0 {
			return c
		}
	}
	switch {
	case ap == "" && bp == "":
		return 0
	case ap == "":
		return 1
	case bp == "":
		return -1
	}
	ai, bi := strings.Split(ap, "."), strings.Split(bp, ".")
	for i := 0; i < len(ai) && i < len(bi); i++ {
		an, aNum := numeric(ai[i])
		bn, bNum := numeric(bi[i])
		switch {
		case aNum && bNum:
			if c := compareNumeric(an, bn); c != 0 {
				return c
			}
		case aNum:
			return -1
		case bNum:
			return 1
		default:
			if c := strings.Compare(ai[i], bi[i]); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(ai), len(bi))
}

func numeric(s string) (string, bool) {
	for _, r := range s {
		if r < '0' || r > '9' {
			return s, false
		}
	}
	return s, true
}

// compareNumeric compares decimal strings of any length without leading
// zeros (the version grammar forbids them in the numeric fields).
func compareNumeric(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// targetPath is where a release's record lives in the channel.
func targetPath(name, version string) string { return name + "/" + version + ".json" }

// Validate checks a record's fields.
func (r *Record) Validate() error {
	if r.Type != RecordType {
		return fmt.Errorf("type %q: want %q", r.Type, RecordType)
	}
	if err := CheckName(r.Name); err != nil {
		return err
	}
	if err := CheckVersion(r.Version); err != nil {
		return err
	}
	if !digestRE.MatchString(r.ImageDigest) {
		return fmt.Errorf("image_digest %q: want sha256:<64 hex>", r.ImageDigest)
	}
	if !hexRE.MatchString(r.DescriptorDigest) {
		return fmt.Errorf("descriptor_digest %q: want the release descriptor's SHA-256, 64 hex digits", r.DescriptorDigest)
	}
	if r.KeyID == "" {
		return errors.New("key_id is empty")
	}
	if r.PublishedAt.IsZero() {
		return errors.New("published_at is missing")
	}
	return nil
}

// marshal encodes a record as the target's bytes: sorted keys, UTC time,
// a final newline.
func (r *Record) marshal() ([]byte, error) {
	c := *r
	c.PublishedAt = c.PublishedAt.UTC().Truncate(time.Second)
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// parseRecord decodes a target's bytes strictly.
func parseRecord(b []byte) (*Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("parse release record: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parse release record: trailing data")
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("release record: %w", err)
	}
	return &r, nil
}

// age says how long ago t was, in whole seconds, for messages.
func age(now, t time.Time) string {
	d := now.Sub(t).Truncate(time.Second)
	if d < 0 {
		return "in the future by " + (-d).String()
	}
	return d.String() + " ago"
}

// itoa is for building metadata file names.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }
