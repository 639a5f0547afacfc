// Command cacheon-engine is the engine build of the cacheon command line:
// the commands the Bazel rules run and the release image's entrypoint
// (installed there as /cacheon/bin/cacheon); see package enginecli.
package main

import (
	"os"

	"github.com/cacheon/engine/tools/cli/enginecli"
)

func main() {
	os.Exit(enginecli.Main(os.Args[1:], enginecli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
