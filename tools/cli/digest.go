package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
)

// maxDigestInput bounds the payload digest reads. Payloads are
// descriptors and snapshots of a few kilobytes; the bound is read before
// anything is parsed, so an endless stream is refused too.
const maxDigestInput = 16 << 20

// readInput reads the named file, or standard input for no argument or
// "-", refusing more than maxDigestInput bytes with canonjson.ErrTooLarge.
func readInput(stdin io.Reader, args []string) (string, []byte, error) {
	name, in := "<stdin>", stdin
	if len(args) > 0 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return "", nil, err
		}
		defer f.Close()
		name, in = args[0], f
	}
	data, err := io.ReadAll(io.LimitReader(in, maxDigestInput+1))
	if err != nil {
		if in == stdin {
			return "", nil, fmt.Errorf("reading standard input: %w", err)
		}
		return "", nil, err
	}
	if len(data) > maxDigestInput {
		return "", nil, fmt.Errorf("%s: %w: more than %d bytes", name, canonjson.ErrTooLarge, maxDigestInput)
	}
	return name, data, nil
}

// digestOptions are the flags and arguments of digest.
type digestOptions struct {
	domain        string
	schemaVersion int
	args          []string
}

func newDigestCommand(s Streams) *cobra.Command {
	var o digestOptions
	cmd := &cobra.Command{
		Use:   "digest --domain D [--schema-version N] [FILE|-]",
		Short: "Print H(domain, payload) of a JSON payload",
		Long: `Print the domain-separated digest H(domain, payload, schema_version) of a
JSON payload read from FILE or standard input: the SHA-256 of the canonical
JSON of {"domain": D, "payload": payload, "schema_version": N}.

Integers of up to 4300 digits are allowed (the most the upstream Python
toolchain converts); floats are rejected (identities carry decimals as
strings), as are duplicate keys, invalid UTF-8, nesting deeper than 512
levels and input over 16 MiB. The domain must match [a-z0-9][a-z0-9._-]*.`,
		Example: `  echo '{"b":[1,"é"],"a":null}' | cacheon digest --domain x
  cacheon digest --domain cacheon.target-catalog catalog.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runDigest(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.domain, "domain", "", "domain string separating this kind of identity (required)")
	cmd.Flags().IntVar(&o.schemaVersion, "schema-version", identity.DefaultSchemaVersion, "envelope schema version")
	cmd.MarkFlagRequired("domain")
	return cmd
}

func runDigest(_ context.Context, s Streams, o digestOptions) error {
	if err := identity.ValidateDomain(o.domain); err != nil {
		return reject.Errorf("--domain: %w", err)
	}
	if o.schemaVersion < 1 {
		return reject.Errorf("--schema-version: %d must be a positive integer", o.schemaVersion)
	}
	name, data, err := readInput(s.In, o.args)
	if errors.Is(err, canonjson.ErrTooLarge) {
		return reject.Wrap(err)
	} else if err != nil {
		return err
	}
	payload, err := canonjson.Parse(data)
	if err != nil {
		return reject.Errorf("%s: %w", name, err)
	}
	d, err := identity.HVersion(identity.Domain(o.domain), payload, o.schemaVersion)
	if err != nil {
		return reject.Errorf("%s: %w", name, err)
	}
	fmt.Fprintln(s.Out, d)
	return nil
}
