package reject

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestEveryFormOfRejectionMatchesTheRoot(t *testing.T) {
	class := New("invalid thing")
	tests := []struct {
		name    string
		err     error
		want    bool
		wantMsg string
	}{
		{"class", class, true, "invalid thing"},
		{"class wrapped with %w", fmt.Errorf("reading x: %w", class), true, "reading x: invalid thing"},
		{"subclass", fmt.Errorf("%w: syntax", class), true, "invalid thing: syntax"},
		{"Wrap", Wrap(errors.New("bad input")), true, "bad input"},
		{"Errorf", Errorf("file %s: %w", "a", errors.New("bad")), true, "file a: bad"},
		{"plain error", errors.New("disk on fire"), false, "disk on fire"},
		{"not exist", fmt.Errorf("open a: %w", fs.ErrNotExist), false, "open a: file does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Is(tc.err); got != tc.want {
				t.Errorf("Is(%v) = %v, want %v", tc.err, got, tc.want)
			}
			if got := tc.err.Error(); got != tc.wantMsg {
				t.Errorf("message %q, want %q", got, tc.wantMsg)
			}
		})
	}
}

func TestWrapKeepsTheChain(t *testing.T) {
	err := Wrap(fmt.Errorf("open a: %w", fs.ErrNotExist))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Wrap lost the wrapped error's chain")
	}
	if Wrap(nil) != nil {
		t.Errorf("Wrap(nil) is not nil")
	}
}

func TestClassesAreDistinct(t *testing.T) {
	a, b := New("a"), New("a")
	if errors.Is(a, b) {
		t.Errorf("two classes with one message match each other")
	}
}
