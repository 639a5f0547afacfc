package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/tools/cli/enginecli"
)

// The engine's binary (cacheon-engine, the rules' tool and the image's
// entrypoint) must be the full command line's commands, not copies: every
// command it has is in the full tree under the same path, with the same
// help, flags and defaults, and the full tree reaches each through the
// same group.
func TestEngineCommandsAreTheFullCLIs(t *testing.T) {
	s := Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
	full := NewRootCommand(s)
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.HasParent() {
			return
		}
		n++
		path := strings.Fields(c.CommandPath())[1:]
		f, rest, err := full.Find(path)
		if err != nil || len(rest) != 0 || f.CommandPath() != c.CommandPath() {
			t.Errorf("%s: not in the full command line (%v)", c.CommandPath(), err)
			return
		}
		if f.Short != c.Short || f.Long != c.Long || f.Example != c.Example || f.Use != c.Use {
			t.Errorf("%s: its help differs from the full command line's", c.CommandPath())
		}
		if c.HasSubCommands() {
			return
		}
		if got, want := usage(c), usage(f); got != want {
			t.Errorf("%s: usage differs:\n%s\nfull command line:\n%s", c.CommandPath(), got, want)
		}
	}
	walk(enginecli.NewRootCommand(s))
	if n < 14 {
		t.Fatalf("walked %d engine commands, want the rules' and the image's (at least 14)", n)
	}
}

func usage(c *cobra.Command) string {
	var b bytes.Buffer
	c.SetOut(&b)
	c.SetErr(&b)
	if err := c.Usage(); err != nil {
		return err.Error()
	}
	return b.String()
}
