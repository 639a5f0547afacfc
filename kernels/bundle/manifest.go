package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// FileName is the manifest's name at the bundle root.
const FileName = "manifest.toml"

// ABIVersion is the op ABI every current bundle declares.
const ABIVersion = "cacheon-op-abi-v0"

// legacyABISHA256 is the SHA-256 of the one pre-rename ABI spelling
// ("optima-op-abi-v0"). Bundles committed before the rename carry it in
// hash-bound bytes that cannot be rewritten, so readers accept it and keep
// the spelling as submitted; writers never emit it.
const legacyABISHA256 = "d2b248137bb3caff34cbb7b89d3e6d6481a52cb22dbac6b32fdca1a484724fb0"

// DefaultVariant is the variant of a row that declares none.
const DefaultVariant = "default"

// Competition modes.
const (
	ModeSlot   = "slot"
	ModeAtomic = "atomic"
	ModeSystem = "system" // legacy donor-era bundles; parsed, never registered
)

// Manifest is a parsed, structurally valid manifest.toml.
type Manifest struct {
	BundleID    string       // display only; never part of an identity
	ABIVersion  string       // as submitted (the legacy spelling is kept, not rewritten)
	Competition *Competition // nil when the manifest has no [competition] table
	Ops         []Op         // manifest order; never decides precedence
	DepPatches  []DepPatch
	// Extra holds unknown top-level keys. Upstream ignores them; we keep
	// them so inspection can show them, and they carry no feature.
	Extra map[string]any
}

// Competition is the bundle's requested target: syntax only. Members,
// displacement and allowed features come from the catalog, never from here.
type Competition struct {
	Target string
	Mode   string // ModeSlot, ModeAtomic or ModeSystem
}

// Op is one implementation row ([[ops]] table).
type Op struct {
	Index           int    // position in [[ops]], for error messages
	Slot            string // semantic slot id
	Variant         string // DefaultVariant unless declared
	VariantExplicit bool   // the row declared variant itself
	Source          string // bundle-relative path of the Python module
	Entry           string // callable in Source
	Prepare         string // optional weight-prep callable; "" when absent
	Setup           string // optional engine-init callable; "" when absent (no target admits it)
	Dtypes          []string
	Architectures   []string
	Metadata        string // bundle-relative metadata JSON path; "" when absent
	BaseKernel      string // validator-owned base kernel an override fills; "" when absent
	OverridePoint   string // the hole in BaseKernel; requires BaseKernel
	CUDASources     []string
	AOTExports      []AOTExport
	// ArtifactResources are validator-allocated storage rows of AOT
	// exports, kept as parsed TOML data.
	ArtifactResources []map[string]any
	// Extra holds unknown op keys; each becomes an op_extra:<key> feature
	// that no target admits.
	Extra map[string]any

	// MetadataDoc is the parsed metadata JSON; set by Load, nil after Parse.
	MetadataDoc *Metadata
}

// Key returns the TOML key path of a field of this row, e.g. "ops[1].source".
func (op *Op) Key(field string) string {
	if field == "" {
		return fmt.Sprintf("ops[%d]", op.Index)
	}
	return fmt.Sprintf("ops[%d].%s", op.Index, field)
}

// IsOverride reports whether the row fills an override point of a base kernel.
func (op *Op) IsOverride() bool { return op.OverridePoint != "" }

// DepPatch is one [[dep_patches]] row: a text diff against a pinned dependency.
type DepPatch struct {
	Index  int
	Target string // pinned dependency name, e.g. "flashinfer"
	Path   string // bundle-relative .patch/.diff path
	// Diff is the parsed patch; set by Load, nil after Parse.
	Diff *Patch
}

// OpsFor returns every row implementing slot, in manifest order.
func (m *Manifest) OpsFor(slot string) []*Op {
	var out []*Op
	for i := range m.Ops {
		if m.Ops[i].Slot == slot {
			out = append(out, &m.Ops[i])
		}
	}
	return out
}

// Slots returns the distinct slots the manifest implements, sorted.
// Variants of one slot count once.
func (m *Manifest) Slots() []string {
	seen := map[string]bool{}
	var out []string
	for _, op := range m.Ops {
		if !seen[op.Slot] {
			seen[op.Slot] = true
			out = append(out, op.Slot)
		}
	}
	sort.Strings(out)
	return out
}

// knownOpKeys are the op keys the ABI defines; any other key is kept as
// Extra.
var knownOpKeys = map[string]bool{
	"slot": true, "variant": true, "source": true, "entry": true, "prepare": true,
	"setup": true, "dtypes": true, "architectures": true, "metadata": true,
	"base_kernel": true, "override_point": true, "cuda_sources": true,
	"aot_exports": true, "artifact_resources": true,
}

// IsKnownABIVersion reports whether abi is the current ABI or the
// reader-only pre-rename spelling.
func IsKnownABIVersion(abi string) bool {
	if abi == ABIVersion {
		return true
	}
	sum := sha256.Sum256([]byte(abi))
	return hex.EncodeToString(sum[:]) == legacyABISHA256
}

// Parse parses and structurally validates manifest text. name is the file
// name used in errors (normally "manifest.toml"). Parse does not touch the
// file system: path existence, metadata and dep-patch contents are checked
// by Load.
func Parse(data []byte, name string) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, newError(ErrLimit, name, "", "manifest is %d bytes; at most %d are allowed", len(data), MaxManifestBytes)
	}
	if err := checkTOMLShape(data, name); err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		e := newError(ErrSyntax, name, "", "%s", strings.TrimPrefix(err.Error(), "toml: "))
		var de *toml.DecodeError
		if errors.As(err, &de) {
			e.Line, _ = de.Position()
			if k := de.Key(); len(k) > 0 {
				e.Key = strings.Join(k, ".")
			}
		}
		return nil, e
	}
	p := &parser{file: name}
	m := &Manifest{}

	bundleID, ok := doc["bundle_id"].(string)
	bundleID = strings.TrimSpace(bundleID)
	switch {
	case !ok || bundleID == "":
		return nil, p.errorf("bundle_id", "must be a non-empty string")
	case !IsSimpleID(bundleID):
		return nil, p.errorf("bundle_id", "%q has characters outside [0-9A-Za-z._-]", bundleID)
	}
	m.BundleID = bundleID

	abi, ok := doc["abi_version"].(string)
	abi = strings.TrimSpace(abi)
	if !ok || !IsKnownABIVersion(abi) {
		return nil, p.errorf("abi_version", "unsupported abi_version %q; supported: %q", abi, ABIVersion)
	}
	m.ABIVersion = abi

	rawOps, ok := doc["ops"].([]any)
	if !ok || len(rawOps) == 0 {
		return nil, p.errorf("ops", "manifest must contain a non-empty [[ops]] array of tables")
	}
	if len(rawOps) > MaxOps {
		return nil, newError(ErrLimit, name, "ops", "manifest has %d op rows; at most %d are allowed", len(rawOps), MaxOps)
	}
	variants := map[string]*slotVariants{}
	for i, raw := range rawOps {
		t, ok := raw.(map[string]any)
		if !ok {
			return nil, p.errorf(fmt.Sprintf("ops[%d]", i), "must be a table")
		}
		op, err := p.parseOp(i, t, variants)
		if err != nil {
			return nil, err
		}
		m.Ops = append(m.Ops, *op)
	}
	if err := checkAOTUnique(p, m.Ops); err != nil {
		return nil, err
	}

	if raw, present := doc["competition"]; present {
		c, err := p.parseCompetition(raw)
		if err != nil {
			return nil, err
		}
		m.Competition = c
	}

	if raw, present := doc["dep_patches"]; present {
		patches, err := p.parseDepPatches(raw)
		if err != nil {
			return nil, err
		}
		m.DepPatches = patches
	}

	for k, v := range doc {
		switch k {
		case "bundle_id", "abi_version", "ops", "competition", "dep_patches":
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]any{}
		}
		m.Extra[k] = v
	}
	return m, nil
}

// slotVariants are the variants the rows of one slot declared so far.
type slotVariants struct {
	seen        map[string]bool
	allExplicit bool // every row so far declared its variant
}

// parser carries the file name into every error.
type parser struct{ file string }

func (p *parser) errorf(key, format string, args ...any) *Error {
	return newError(ErrSchema, p.file, key, format, args...)
}

func (p *parser) parseOp(i int, t map[string]any, variants map[string]*slotVariants) (*Op, error) {
	op := &Op{Index: i}
	str := func(field string, required bool) (string, error) {
		raw, present := t[field]
		if !present {
			if required {
				return "", p.errorf(op.Key(field), "missing")
			}
			return "", nil
		}
		s, ok := raw.(string)
		if !ok {
			return "", p.errorf(op.Key(field), "must be a string, got %s", tomlType(raw))
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return "", p.errorf(op.Key(field), "must be a non-empty string")
		}
		return s, nil
	}
	var err error
	if op.Slot, err = str("slot", true); err != nil {
		return nil, err
	}

	op.Variant = DefaultVariant
	if raw, present := t["variant"]; present {
		s, ok := raw.(string)
		if !ok {
			return nil, p.errorf(op.Key("variant"), "must be a string, got %s", tomlType(raw))
		}
		op.Variant = strings.TrimSpace(s)
		op.VariantExplicit = true
		if !IsSimpleID(op.Variant) {
			return nil, p.errorf(op.Key("variant"), "%q must be a simple identifier [0-9A-Za-z._-]+", op.Variant)
		}
	}
	prior := variants[op.Slot]
	if prior == nil {
		prior = &slotVariants{seen: map[string]bool{}, allExplicit: true}
		variants[op.Slot] = prior
	}
	if len(prior.seen) > 0 && !(prior.allExplicit && op.VariantExplicit) {
		return nil, p.errorf(op.Key("variant"), "slot %q repeats, so every row of it must declare an explicit unique variant", op.Slot)
	}
	if prior.seen[op.Variant] {
		return nil, p.errorf(op.Key("variant"), "duplicate variant %q for slot %q", op.Variant, op.Slot)
	}
	if len(prior.seen) >= MaxVariantsPerSlot {
		return nil, newError(ErrLimit, p.file, op.Key("variant"), "slot %q has more than %d variants", op.Slot, MaxVariantsPerSlot)
	}
	prior.seen[op.Variant] = true
	prior.allExplicit = prior.allExplicit && op.VariantExplicit

	if op.Source, err = str("source", true); err != nil {
		return nil, err
	}
	if err := checkRelPath(op.Source); err != nil {
		return nil, newError(ErrPath, p.file, op.Key("source"), "%v", err)
	}
	if op.Entry, err = str("entry", true); err != nil {
		return nil, err
	}
	if !IsPythonIdentifier(op.Entry) {
		return nil, p.errorf(op.Key("entry"), "%q must be a Python identifier", op.Entry)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"prepare", &op.Prepare}, {"setup", &op.Setup}} {
		if *f.dst, err = str(f.name, false); err != nil {
			return nil, err
		}
		if *f.dst != "" && !IsPythonIdentifier(*f.dst) {
			return nil, p.errorf(op.Key(f.name), "%q must be a Python identifier", *f.dst)
		}
	}
	if op.Metadata, err = str("metadata", false); err != nil {
		return nil, err
	}
	if op.Metadata != "" {
		if err := checkRelPath(op.Metadata); err != nil {
			return nil, newError(ErrPath, p.file, op.Key("metadata"), "%v", err)
		}
	}
	if op.Dtypes, err = p.stringArray(t, op, "dtypes"); err != nil {
		return nil, err
	}
	if op.Architectures, err = p.stringArray(t, op, "architectures"); err != nil {
		return nil, err
	}
	if op.BaseKernel, err = str("base_kernel", false); err != nil {
		return nil, err
	}
	if op.OverridePoint, err = str("override_point", false); err != nil {
		return nil, err
	}
	if op.OverridePoint != "" && op.BaseKernel == "" {
		return nil, p.errorf(op.Key("override_point"), "requires base_kernel")
	}

	if raw, present := t["cuda_sources"]; present {
		arr, ok := raw.([]any)
		if !ok {
			return nil, p.errorf(op.Key("cuda_sources"), "must be an array of paths, got %s", tomlType(raw))
		}
		if len(arr) > MaxFiles {
			return nil, newError(ErrLimit, p.file, op.Key("cuda_sources"), "has %d paths; a bundle holds at most %d files", len(arr), MaxFiles)
		}
		for j, v := range arr {
			key := fmt.Sprintf("%s[%d]", op.Key("cuda_sources"), j)
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, p.errorf(key, "must be a non-empty string path")
			}
			if err := checkRelPath(s); err != nil {
				return nil, newError(ErrPath, p.file, key, "%v", err)
			}
			if !strings.HasSuffix(s, ".cu") && !strings.HasSuffix(s, ".cuh") {
				return nil, newError(ErrPath, p.file, key, "%q must be a .cu or .cuh file", s)
			}
			op.CUDASources = append(op.CUDASources, s)
		}
	}

	if raw, present := t["artifact_resources"]; present {
		arr, ok := raw.([]any)
		if !ok {
			return nil, p.errorf(op.Key("artifact_resources"), "must be an array of tables, got %s", tomlType(raw))
		}
		res, err := p.parseArtifactResources(op, arr)
		if err != nil {
			return nil, err
		}
		op.ArtifactResources = res
	}
	if raw, present := t["aot_exports"]; present {
		exports, err := p.parseAOTExports(op, raw)
		if err != nil {
			return nil, err
		}
		op.AOTExports = exports
	}
	if len(op.ArtifactResources) > 0 && len(op.AOTExports) == 0 {
		return nil, p.errorf(op.Key("artifact_resources"), "artifact resources require aot_exports")
	}
	if len(op.AOTExports) > 0 {
		if op.Prepare != "" || op.Setup != "" || op.BaseKernel != "" || op.OverridePoint != "" {
			return nil, p.errorf(op.Key("aot_exports"), "AOT rows may not also declare prepare, setup, base_kernel or override_point")
		}
		if len(op.CUDASources) > 0 {
			return nil, p.errorf(op.Key("aot_exports"), "AOT rows may not also declare cuda_sources")
		}
	}

	for k, v := range t {
		if knownOpKeys[k] {
			continue
		}
		if op.Extra == nil {
			op.Extra = map[string]any{}
		}
		op.Extra[k] = v
	}
	return op, nil
}

func (p *parser) stringArray(t map[string]any, op *Op, field string) ([]string, error) {
	raw, present := t[field]
	if !present {
		return nil, nil
	}
	arr, ok := raw.([]any)
	if !ok {
		return nil, p.errorf(op.Key(field), "must be an array of strings, got %s", tomlType(raw))
	}
	if len(arr) > MaxPredicateValues {
		return nil, newError(ErrLimit, p.file, op.Key(field), "has %d values; at most %d are allowed", len(arr), MaxPredicateValues)
	}
	out := make([]string, 0, len(arr))
	for j, v := range arr {
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return nil, p.errorf(fmt.Sprintf("%s[%d]", op.Key(field), j), "must be a non-empty string")
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out, nil
}

func (p *parser) parseCompetition(raw any) (*Competition, error) {
	t, ok := raw.(map[string]any)
	if !ok {
		return nil, p.errorf("competition", "must be a table {target, mode}")
	}
	var unknown []string
	for k := range t {
		if k != "target" && k != "mode" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, p.errorf("competition", "unknown keys %q; only target and mode are allowed", unknown)
	}
	target, ok := t["target"].(string)
	if !ok {
		return nil, p.errorf("competition.target", "must be a string")
	}
	target = strings.TrimSpace(target)
	if !IsSimpleID(target) {
		return nil, p.errorf("competition.target", "%q must be a simple identifier [0-9A-Za-z._-]+", target)
	}
	mode, ok := t["mode"].(string)
	if !ok {
		return nil, p.errorf("competition.mode", "must be a string")
	}
	mode = strings.TrimSpace(mode)
	switch mode {
	case ModeSlot, ModeAtomic, ModeSystem:
	default:
		return nil, p.errorf("competition.mode", "%q must be \"slot\", \"atomic\" or legacy \"system\"", mode)
	}
	return &Competition{Target: target, Mode: mode}, nil
}

func (p *parser) parseDepPatches(raw any) ([]DepPatch, error) {
	arr, ok := raw.([]any)
	if !ok {
		return nil, p.errorf("dep_patches", "must be an array of {target, path} tables")
	}
	seen := map[[2]string]bool{}
	var out []DepPatch
	for i, v := range arr {
		key := fmt.Sprintf("dep_patches[%d]", i)
		t, ok := v.(map[string]any)
		if !ok {
			return nil, p.errorf(key, "must be a table")
		}
		var unknown []string
		for k := range t {
			if k != "target" && k != "path" {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return nil, p.errorf(key, "unknown keys %q; only target and path are allowed", unknown)
		}
		target, _ := t["target"].(string)
		target = strings.TrimSpace(target)
		if !IsSimpleID(target) {
			return nil, p.errorf(key+".target", "%q must be a simple identifier [0-9A-Za-z._-]+", target)
		}
		path, _ := t["path"].(string)
		path = strings.TrimSpace(path)
		if path == "" {
			return nil, p.errorf(key+".path", "must be a non-empty string path")
		}
		if err := checkRelPath(path); err != nil {
			return nil, newError(ErrPath, p.file, key+".path", "%v", err)
		}
		if !strings.HasSuffix(path, ".patch") && !strings.HasSuffix(path, ".diff") {
			return nil, newError(ErrPath, p.file, key+".path", "%q must be a .patch or .diff file", path)
		}
		pair := [2]string{target, path}
		if seen[pair] {
			return nil, p.errorf(key, "duplicate dep patch (target %q, path %q)", target, path)
		}
		seen[pair] = true
		out = append(out, DepPatch{Index: i, Target: target, Path: path})
	}
	return out, nil
}

// tomlType names a decoded TOML value's type for error messages.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date/time"
	}
}
