package worker

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Text a worker writes (an exception's message, a traceback, the end of
// its stderr) reaches reports that leave the host. The candidate controls
// it, so the controller bounds and redacts it here, in Go, whatever the
// worker did itself: a kernel could otherwise print megabytes into a
// report, or the host's layout (the run directory, the checkout it lies
// in, home directories, where the interpreter is installed).

// Bounds on worker text in a report.
const (
	// MaxErrorField bounds one error text: an exception's message and the
	// last lines of its traceback fit.
	MaxErrorField = 2000
	// MaxErrorTotal bounds the error texts of one result file together.
	MaxErrorTotal = 16000
)

// Placeholders that replace host paths in worker text.
const (
	PlaceWork        = "<work>"        // the worker's own work directory
	PlaceRun         = "<run>"         // the run directory and the directories around it
	PlaceValidator   = "<validator>"   // the validator or engine root
	PlaceInput       = "<input>"       // a read-only path given to the worker (the bundle)
	PlaceShared      = "<shared>"      // a writable path besides the work directory
	PlaceInterpreter = "<interpreter>" // a library directory of the interpreter
	PlaceHome        = "<home>"        // a home directory
)

// homePattern matches home directories: /root and /home/NAME.
var homePattern = regexp.MustCompile(`/root\b|/home/[^/\s'":]+`)

// Redactor bounds worker text and replaces host paths in it.
type Redactor struct {
	subs []substitution // longest path first
}

type substitution struct{ path, place string }

// NewRedactor replaces each path of places (and what it resolves to) by
// its placeholder; a path inside another is replaced by its own.
func NewRedactor(places map[string]string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	add := func(p, place string) {
		p = filepath.Clean(p)
		// A top-level directory (/tmp, /usr) names nothing of this host.
		if !filepath.IsAbs(p) || strings.Count(p, "/") < 2 || seen[p] {
			return
		}
		seen[p] = true
		r.subs = append(r.subs, substitution{p, place})
	}
	for p, place := range places {
		add(p, place)
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			add(resolved, place)
		}
	}
	sort.Slice(r.subs, func(i, j int) bool {
		if len(r.subs[i].path) != len(r.subs[j].path) {
			return len(r.subs[i].path) > len(r.subs[j].path)
		}
		return r.subs[i].path < r.subs[j].path
	})
	return r
}

// dirRedactor is the redactor of a work directory alone: the directory,
// and every directory above it below the top level (the run directory,
// and the checkout or home it lies in), with the user's home.
func dirRedactor(workDir string) *Redactor {
	places := map[string]string{workDir: PlaceWork}
	for d := filepath.Dir(filepath.Clean(workDir)); strings.Count(d, "/") >= 2; d = filepath.Dir(d) {
		places[d] = PlaceRun
	}
	if home, err := os.UserHomeDir(); err == nil {
		places[home] = PlaceHome
	}
	return NewRedactor(places)
}

// redactor is the redactor of a worker spec: its directories and
// paths, the directories around its work directory, and its
// interpreter's library directories.
func (s Spec) redactor(roots []string) *Redactor {
	places := map[string]string{}
	for d := filepath.Dir(filepath.Clean(s.WorkDir)); strings.Count(d, "/") >= 2; d = filepath.Dir(d) {
		places[d] = PlaceRun
	}
	if home, err := os.UserHomeDir(); err == nil {
		places[home] = PlaceHome
	}
	for _, r := range roots {
		places[r] = PlaceInterpreter
	}
	if s.Python != "" {
		places[filepath.Dir(s.Python)] = PlaceInterpreter
	}
	for _, p := range s.ReadOnly {
		places[p] = PlaceInput
	}
	for _, p := range s.Writable {
		places[p] = PlaceShared
	}
	places[s.ValidatorRoot] = PlaceValidator
	places[s.WorkDir] = PlaceWork
	return NewRedactor(places)
}

// Redact replaces host paths in s and bounds it to MaxErrorField bytes.
// A nil Redactor redacts home directories and bounds.
func (r *Redactor) Redact(s string) string { return bound(r.paths(s), MaxErrorField) }

// paths replaces host paths in s; it never makes s longer than it was
// by more than the placeholders' lengths.
func (r *Redactor) paths(s string) string {
	if r != nil {
		for _, sub := range r.subs {
			s = replacePath(s, sub.path, sub.place)
		}
	}
	return homePattern.ReplaceAllString(s, PlaceHome)
}

// replacePath replaces path in s where it is a whole path or a prefix of
// one (followed by "/" or a character no path name here holds), so that
// /run/a does not turn /run/ab into <run>b.
func replacePath(s, path, place string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, path)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(path)
		b.WriteString(s[:i])
		if end == len(s) || !pathChar(s[end]) {
			b.WriteString(place)
		} else {
			b.WriteString(path)
		}
		s = s[end:]
	}
}

func pathChar(c byte) bool {
	return c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// bound cuts s to at most n bytes on a character boundary, saying how
// much was cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " … [cut]"
	if n < len(mark) {
		return ""
	}
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// RedactErrors redacts every string field named Error or ending in
// "Error" (HarnessError, ContractError) in the value v points to, in
// structs, pointers and slices, and bounds them to MaxErrorTotal
// together: fields past the budget are cut to what is left.
func (r *Redactor) RedactErrors(v any) {
	budget := MaxErrorTotal
	var walk func(reflect.Value)
	walk = func(x reflect.Value) {
		switch x.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !x.IsNil() {
				walk(x.Elem())
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < x.Len(); i++ {
				walk(x.Index(i))
			}
		case reflect.Struct:
			t := x.Type()
			for i := 0; i < x.NumField(); i++ {
				f := x.Field(i)
				if !t.Field(i).IsExported() {
					continue
				}
				if f.Kind() == reflect.String && strings.HasSuffix(t.Field(i).Name, "Error") && f.CanSet() {
					s := r.Redact(f.String())
					if len(s) > budget {
						s = bound(s, max(budget, 0))
					}
					budget -= len(s)
					f.SetString(s)
					continue
				}
				walk(f)
			}
		}
	}
	walk(reflect.ValueOf(v))
}
