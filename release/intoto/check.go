package intoto

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/verify"
)

// LoadCheck reads the signed layout at path and the owner public keys at
// ownerKeyPaths, and returns the check release/verify runs after it has
// verified a release: the release against the layout, with the links in
// linkDir. A layout that does not parse is a rejection; a file that cannot
// be read is an I/O error.
func LoadCheck(path string, ownerKeyPaths []string, linkDir string) (verify.LayoutCheck, error) {
	if len(ownerKeyPaths) == 0 || linkDir == "" {
		return nil, errors.New("a layout check needs the layout owner's keys and the links directory")
	}
	mb, err := Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	} else if err != nil {
		return nil, reject.Wrap(err)
	}
	var owners [][]byte
	for _, p := range ownerKeyPaths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("layout owner key: %w", err)
		}
		owners = append(owners, b)
	}
	return func(rel *verify.Release) error {
		if err := Check(mb, owners, linkDir, rel); err != nil {
			// The refusal names the layout and the links it read.
			return fmt.Errorf("layout %s, links %s: %w", path, linkDir, err)
		}
		rel.Report.Checks = append(rel.Report.Checks, verify.CheckResult{Name: verify.CheckLayout, OK: true,
			Detail: fmt.Sprintf("layout %s: qualify, review, materialize, build and sign links verified", path)})
		return nil
	}, nil
}
