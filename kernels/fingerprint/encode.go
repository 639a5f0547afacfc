package fingerprint

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// EncodingVersion is the version of the stored form Encode writes.
const EncodingVersion = 1

// encoded is the stored form of a Fingerprint. A file's hashes are one
// hex string of 16 digits per hash: JSON numbers cannot carry a uint64
// exactly, and one string keeps a stored fingerprint compact.
type encoded struct {
	SchemaVersion         int           `json:"schema_version"`
	ContentHash           string        `json:"content_hash"`
	SelectedPayloadDigest string        `json:"selected_payload_digest"`
	NormalizedDeltaDigest string        `json:"normalized_delta_digest"`
	Files                 []encodedFile `json:"files"`
}

type encodedFile struct {
	Path             string `json:"path"`
	Role             string `json:"role"`
	NormalizedSHA256 string `json:"normalized_sha256"`
	Tokens           int    `json:"tokens"`
	Hashes           string `json:"hashes"`
}

// Encode returns fp as canonical JSON, the form a ledger stores so that a
// later proposal is compared with what intake saw, not with bytes read
// again.
func Encode(fp *Fingerprint) ([]byte, error) {
	e := encoded{SchemaVersion: EncodingVersion, ContentHash: fp.ContentHash.String(), SelectedPayloadDigest: fp.SelectedPayloadDigest.String(),
		NormalizedDeltaDigest: fp.NormalizedDeltaDigest.String(), Files: make([]encodedFile, 0, len(fp.Files))}
	for _, f := range fp.Files {
		b := make([]byte, 8*len(f.Hashes))
		for i, h := range f.Hashes {
			binary.BigEndian.PutUint64(b[8*i:], h)
		}
		e.Files = append(e.Files, encodedFile{Path: f.Path, Role: f.Role, NormalizedSHA256: f.NormalizedSHA256, Tokens: f.Tokens, Hashes: hex.EncodeToString(b)})
	}
	return canonjson.Marshal(e)
}

// Decode reads what Encode wrote. It checks what Compare relies on: the
// digests are 64 hex, each file's hashes sorted and distinct.
func Decode(data []byte) (*Fingerprint, error) {
	var e encoded
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("stored fingerprint: %w", err)
	}
	if e.SchemaVersion != EncodingVersion {
		return nil, fmt.Errorf("stored fingerprint: schema_version %d, this build reads %d", e.SchemaVersion, EncodingVersion)
	}
	fp := &Fingerprint{Files: []File{}}
	for _, d := range []struct {
		name, v string
		dst     *identity.Digest
	}{
		{"content_hash", e.ContentHash, &fp.ContentHash},
		{"selected_payload_digest", e.SelectedPayloadDigest, &fp.SelectedPayloadDigest},
		{"normalized_delta_digest", e.NormalizedDeltaDigest, &fp.NormalizedDeltaDigest},
	} {
		parsed, err := identity.Parse(d.v)
		if err != nil || !identity.IsHex64(d.v) {
			return nil, fmt.Errorf("stored fingerprint: %s %q is not 64 lowercase hex", d.name, d.v)
		}
		*d.dst = parsed
	}
	for _, f := range e.Files {
		b, err := hex.DecodeString(f.Hashes)
		if err != nil || len(b)%8 != 0 {
			return nil, fmt.Errorf("stored fingerprint: file %s: hashes are not 16 hex digits each", f.Path)
		}
		hs := make([]uint64, len(b)/8)
		for i := range hs {
			hs[i] = binary.BigEndian.Uint64(b[8*i:])
		}
		if !sort.SliceIsSorted(hs, func(i, j int) bool { return hs[i] < hs[j] }) || hasRepeat(hs) {
			return nil, fmt.Errorf("stored fingerprint: file %s: hashes are not sorted and distinct", f.Path)
		}
		if f.Tokens < 0 {
			return nil, fmt.Errorf("stored fingerprint: file %s: tokens %d < 0", f.Path, f.Tokens)
		}
		fp.Files = append(fp.Files, File{Path: f.Path, Role: f.Role, NormalizedSHA256: f.NormalizedSHA256, Tokens: f.Tokens, Hashes: hs})
	}
	fp.all = fp.hashes()
	return fp, nil
}

func hasRepeat(hs []uint64) bool {
	for i := 1; i < len(hs); i++ {
		if hs[i] == hs[i-1] {
			return true
		}
	}
	return false
}
