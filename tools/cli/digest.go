package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/tools/canonjson"
	"github.com/cacheon/engine/tools/identity"
)

func newDigestCommand(s Streams) *cobra.Command {
	var domain string
	var schemaVersion int
	cmd := &cobra.Command{
		Use:   "digest --domain D [--schema-version N] [FILE|-]",
		Short: "Print H(domain, payload) of a JSON payload",
		Long: `Print the domain-separated digest H(domain, payload, schema_version) of a
JSON payload read from FILE or standard input: the SHA-256 of the canonical
JSON of {"domain": D, "payload": payload, "schema_version": N}.

Integers of any size are allowed; floats are rejected (identities carry
decimals as strings), as are duplicate keys and invalid UTF-8. The domain
must match [a-z0-9][a-z0-9._-]*.`,
		Example: `  echo '{"b":[1,"é"],"a":null}' | cacheon digest --domain x
  cacheon digest --domain cacheon.target-catalog catalog.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := identity.ValidateDomain(domain); err != nil {
				return Rejected(fmt.Errorf("--domain: %w", err))
			}
			if schemaVersion < 1 {
				return Rejected(fmt.Errorf("--schema-version: %d must be a positive integer", schemaVersion))
			}
			name, data, err := readInput(s.In, args)
			if err != nil {
				return err
			}
			payload, err := canonjson.Parse(data)
			if err != nil {
				return Rejected(fmt.Errorf("%s: %w", name, err))
			}
			d, err := identity.DigestVersion(domain, payload, schemaVersion)
			if err != nil {
				return Rejected(fmt.Errorf("%s: %w", name, err))
			}
			fmt.Fprintln(s.Out, d)
			return nil
		},
	}
	cmd.Flags().StringVar(&domain, "domain", "", "domain string separating this kind of identity (required)")
	cmd.Flags().IntVar(&schemaVersion, "schema-version", identity.DefaultSchemaVersion, "envelope schema version")
	cmd.MarkFlagRequired("domain")
	return cmd
}

// readInput reads the named file, or standard input for no argument or "-".
func readInput(stdin io.Reader, args []string) (string, []byte, error) {
	if len(args) == 0 || args[0] == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return "", nil, fmt.Errorf("reading standard input: %w", err)
		}
		return "<stdin>", data, nil
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return "", nil, err
	}
	return args[0], data, nil
}
