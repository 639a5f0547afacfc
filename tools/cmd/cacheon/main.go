// Command cacheon is the Cacheon Engine command line; see package cli.
package main

import (
	"os"

	"github.com/cacheon/engine/tools/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
