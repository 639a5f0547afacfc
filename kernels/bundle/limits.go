package bundle

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Loading limits (validator policy). Every file Load parses is read
// through a size limit before any parser sees a byte, and the formats that
// let a small text describe a large or slow structure are bounded where
// they do: TOML keys (their length, how deep a dotted key or table header
// reaches, how many distinct keys are live at once), nested TOML values,
// JSON nesting, and the number of op rows and variants. Within the limits
// every stage of loading costs time proportional to its input.
const (
	// MaxManifestBytes bounds manifest.toml.
	MaxManifestBytes = 1 << 20
	// MaxRebuildPlanBytes bounds rebuild.json (three patchers at most).
	MaxRebuildPlanBytes = 64 << 10
	// MaxDepPatchBytes bounds one dependency patch: the inspectable-file
	// limit of the tree.
	MaxDepPatchBytes = MaxInspectableFileBytes

	// MaxOps bounds the [[ops]] rows of a manifest.
	MaxOps = 256
	// MaxVariantsPerSlot bounds the variants of one slot. Variant domains
	// are checked pairwise for overlap, so this bounds that check at
	// MaxVariantsPerSlot comparisons per row.
	MaxVariantsPerSlot = 64

	// MaxTOMLKeyBytes bounds one TOML key component.
	MaxTOMLKeyBytes = 256
	// MaxTOMLKeyDepth bounds the components of a key together with those
	// of the table header it sits under ("a.b.c" under [x.y] is 5).
	MaxTOMLKeyDepth = 16
	// MaxTOMLValueDepth bounds nested arrays and inline tables.
	MaxTOMLValueDepth = 32
	// MaxTOMLLiveKeys bounds the distinct key paths the TOML decoder
	// holds at once: those outside array tables plus those of the current
	// element of every top-level array table ([[ops]] row). The decoder
	// scans the keys it holds on every lookup and on every new array-table
	// element, so this bound keeps decoding linear.
	MaxTOMLLiveKeys = 512
	// MaxTOMLArrayTables bounds the array-table headers ([[ops]],
	// [[ops.aot_exports]], …) of a document: the decoder rescans the keys
	// it holds at each one. Room for MaxOps rows with their exports and
	// artifact resources.
	MaxTOMLArrayTables = 16384

	// MaxJSONDepth bounds the nesting of metadata and rebuild-plan JSON.
	MaxJSONDepth = 256
	// MaxPredicateValues bounds the allowed values of one capability
	// predicate.
	MaxPredicateValues = 4096
)

// readFile reads the bundle file rel (a clean POSIX path) for a parser,
// refusing anything but a regular file and more than limit bytes. The file
// is opened without blocking and judged by the opened descriptor, so a
// FIFO or device swapped in after the tree walk is refused at once, and at
// most limit+1 bytes are read whatever the file grows to. Oversize files
// are rejected with class.
func readFile(dir, rel string, limit int64, class error, what string) ([]byte, error) {
	f, info, err := OpenRegular(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return nil, newError(ErrPath, rel, "", "%s is no longer a regular file", what)
		}
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, newError(class, rel, "", "%s is %d bytes; at most %d are allowed", what, info.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, newError(class, rel, "", "%s grew past %d bytes while read", what, limit)
	}
	return data, nil
}

// checkTOMLShape applies the TOML limits to manifest text in one pass of
// the syntax-only parser, before the document is decoded. Syntax errors
// are left to the decoder, which reports them with their line.
func checkTOMLShape(data []byte, file string) error {
	s := &tomlShape{
		file:       file,
		persistent: map[string]bool{},
		elements:   map[string]map[string]bool{},
	}
	p := &s.p
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable, unstable.KeyValue:
		default:
			continue
		}
		if it := e.Key(); it.Next() {
			s.at = it.Node().Raw
		}
		parts, err := s.keyParts(e.Key())
		if err != nil {
			return err
		}
		if e.Kind != unstable.KeyValue {
			if err := s.tableHeader(parts, e.Kind == unstable.ArrayTable); err != nil {
				return err
			}
			continue
		}
		if n := len(s.header) + len(parts); n > MaxTOMLKeyDepth {
			return s.limit(strings.Join(parts, "."), "key reaches %d components deep; at most %d are allowed", n, MaxTOMLKeyDepth)
		}
		live := s.scope()
		path, err := s.addKeys(live, strings.Join(s.header, "\x00"), parts)
		if err != nil {
			return err
		}
		if err := s.value(e.Value(), 0, path, live, true); err != nil {
			return err
		}
	}
	return nil
}

// tomlShape is the state of one checkTOMLShape pass. The decoder keeps
// every key path it has seen, dropping an array-table element's keys when
// the next element of that array starts; persistent and elements mirror
// that, and live counts what they hold together.
type tomlShape struct {
	p          unstable.Parser
	file       string
	at         unstable.Range             // the current expression's first key
	persistent map[string]bool            // key paths outside top-level array tables
	elements   map[string]map[string]bool // top-level array name -> key paths of its current element
	live       int                        // key paths held in persistent and elements
	arrays     int                        // array-table headers so far
	header     []string                   // the current table header's components
}

func (s *tomlShape) limit(key, format string, args ...any) error {
	e := newError(ErrLimit, s.file, key, format, args...)
	// Shape counts lines from the start, so only an error pays for it.
	e.Line = s.p.Shape(s.at).Start.Line
	return e
}

// scope is where the keys of the current table live.
func (s *tomlShape) scope() map[string]bool {
	if len(s.header) > 0 {
		if el, ok := s.elements[s.header[0]]; ok {
			return el
		}
	}
	return s.persistent
}

func (s *tomlShape) tableHeader(parts []string, array bool) error {
	if len(parts) > MaxTOMLKeyDepth {
		return s.limit("", "table header has %d key components; at most %d are allowed", len(parts), MaxTOMLKeyDepth)
	}
	s.header = append(s.header[:0], parts...)
	if array {
		s.arrays++
		if s.arrays > MaxTOMLArrayTables {
			return s.limit("", "more than %d array-table headers", MaxTOMLArrayTables)
		}
	}
	if array && len(parts) == 1 {
		if _, err := s.addKeys(s.persistent, "", parts); err != nil {
			return err
		}
		el, ok := s.elements[parts[0]]
		if !ok {
			el = map[string]bool{}
			s.elements[parts[0]] = el
		}
		s.live -= len(el)
		clear(el)
		return nil
	}
	_, err := s.addKeys(s.scope(), "", parts)
	return err
}

// addKeys records every prefix of parts below path (each is a table or key
// the decoder tracks) in scope and returns the full path.
func (s *tomlShape) addKeys(scope map[string]bool, path string, parts []string) (string, error) {
	for _, c := range parts {
		if path != "" {
			path += "\x00"
		}
		path += c
		if !scope[path] {
			scope[path] = true
			s.live++
		}
	}
	if s.live > MaxTOMLLiveKeys {
		return "", s.limit("", "more than %d distinct keys held at once", MaxTOMLLiveKeys)
	}
	return path, nil
}

// keyParts returns the components of a key, refusing long ones.
func (s *tomlShape) keyParts(it unstable.Iterator) ([]string, error) {
	var parts []string
	for it.Next() {
		k := it.Node().Data
		if len(k) > MaxTOMLKeyBytes {
			return nil, s.limit("", "a key component is %d bytes; at most %d are allowed", len(k), MaxTOMLKeyBytes)
		}
		if len(parts) >= MaxTOMLKeyDepth {
			return nil, s.limit("", "a key has more than %d components", MaxTOMLKeyDepth)
		}
		parts = append(parts, string(k))
	}
	return parts, nil
}

// value bounds nesting and keys inside a value. The keys of an inline
// table outside any array are held by the decoder like other keys (held,
// in scope); an inline table inside an array is checked by the decoder on
// its own, so its keys count in a scope of their own.
func (s *tomlShape) value(v *unstable.Node, depth int, path string, scope map[string]bool, held bool) error {
	if v == nil || (v.Kind != unstable.Array && v.Kind != unstable.InlineTable) {
		return nil
	}
	if depth >= MaxTOMLValueDepth {
		return s.limit("", "arrays and inline tables nest more than %d levels", MaxTOMLValueDepth)
	}
	it := v.Children()
	if v.Kind == unstable.Array {
		for it.Next() {
			if err := s.value(it.Node(), depth+1, "", nil, false); err != nil {
				return err
			}
		}
		return nil
	}
	if scope == nil {
		scope = map[string]bool{}
	}
	for it.Next() {
		kv := it.Node()
		if kv.Kind != unstable.KeyValue {
			continue
		}
		parts, err := s.keyParts(kv.Key())
		if err != nil {
			return err
		}
		sub := path
		if held {
			if sub, err = s.addKeys(scope, path, parts); err != nil {
				return err
			}
		} else {
			for _, k := range parts {
				sub += "\x00" + k
				scope[sub] = true
			}
			if len(scope) > MaxTOMLLiveKeys {
				return s.limit("", "an inline table has more than %d keys", MaxTOMLLiveKeys)
			}
		}
		if err := s.value(kv.Value(), depth+1, sub, scope, held); err != nil {
			return err
		}
	}
	return nil
}
