//go:build linux

package sandbox

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// TestLandlockSupport: a kernel without Landlock, or with an ABI that
// cannot scope abstract sockets and signals (or whose signal scoping has
// the unfixed erratum), is refused as a host without namespaces is.
func TestLandlockSupport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		version, errat int
		err            error
		want           string // "" = accepted
	}{
		{"ABI 7 with the erratum fixed", 7, landlockErrataSignal, nil, ""},
		{"ABI 6 with the erratum fixed", 6, landlockErrataSignal, nil, ""},
		{"ABI 6 without the fix", 6, 0, nil, "Landlock ABI is 5"},
		{"ABI 5", 5, 0, nil, "Landlock ABI is 5"},
		{"not built in", 0, 0, syscall.ENOSYS, "not enabled"},
		{"disabled at boot", 0, 0, syscall.EOPNOTSUPP, "not enabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := landlockSupport(tc.version, tc.errat, tc.err)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrUnavailable saying %q", err, tc.want)
			}
		})
	}
}
