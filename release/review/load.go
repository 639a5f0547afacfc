package review

import (
	"fmt"
	"os"
	"strings"

	"github.com/cacheon/engine/internal/reject"
)

// LoadCrown reads and parses the crown binding file at path. A file that
// cannot be read is an I/O error; one that does not parse is a rejection.
func LoadCrown(path string) (*Crown, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseCrown(b)
	if err != nil {
		return nil, reject.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// LoadEvidence reads the evidence documents named by specs, each
// "ROLE=FILE", into the map Request.Evidence takes. A spec that is not
// ROLE=FILE, an unknown role or a role given twice is a rejection; a file
// that cannot be read is an I/O error. Whether every role is present is
// New's check.
func LoadEvidence(specs []string) (map[Role][]byte, error) {
	ev := map[Role][]byte{}
	for _, e := range specs {
		name, file, ok := strings.Cut(e, "=")
		if !ok {
			return nil, reject.Errorf("evidence %q: want ROLE=FILE", e)
		}
		role, err := ParseRole(name)
		if err != nil {
			return nil, reject.Errorf("evidence %q: %w", e, err)
		}
		if _, dup := ev[role]; dup {
			return nil, reject.Errorf("evidence %s given twice", role)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("evidence %s: %w", role, err)
		}
		ev[role] = b
	}
	return ev, nil
}
