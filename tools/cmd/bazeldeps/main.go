// Command bazeldeps generates Bazel repositories for the project's external
// Go modules; tools/bootstrap.sh runs it. See package bazeldeps.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cacheon/engine/tools/bazeldeps"
)

func main() {
	gazelle := flag.String("gazelle", "", "path of the gazelle binary")
	out := flag.String("out", ".cache/godeps", "output directory, relative to the repository root")
	flag.Parse()
	if *gazelle == "" {
		fmt.Fprintln(os.Stderr, "bazeldeps: -gazelle is required")
		os.Exit(1)
	}
	mods, err := bazeldeps.Generate(bazeldeps.Options{RepoRoot: ".", Out: *out, Gazelle: *gazelle, Log: os.Stderr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bazeldeps: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "bazeldeps: %d module repositories in %s\n", len(mods), *out)
}
