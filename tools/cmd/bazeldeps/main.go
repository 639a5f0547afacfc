// Command bazeldeps generates Bazel repositories for the project's external
// Go modules (tools/bootstrap.sh runs it) and keeps MODULE.bazel's go_deps
// repository list in step with the BUILD files (tools/gazelle.sh runs it
// with -module). See package bazeldeps.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cacheon/engine/tools/bazeldeps"
)

func main() {
	gazelle := flag.String("gazelle", "", "path of the gazelle binary")
	out := flag.String("out", ".cache/godeps", "output directory: absolute, or relative to the repository root")
	linked := flag.String("linked", "", "where the workspace finds the output directory, relative to its root (default: -out)")
	module := flag.String("module", "", "rewrite this MODULE.bazel's use_repo(go_deps, ...) list instead of generating repositories")
	modinfo := flag.String("modinfo", "", "write a binary's Go module information (a .bzl file) to this path instead of generating repositories")
	mainPkg := flag.String("main", "github.com/cacheon/engine/tools/cmd/cacheon", "the main package whose module information -modinfo writes")
	flag.Parse()
	var err error
	if *modinfo != "" {
		err = writeModInfo(*modinfo, *mainPkg)
	} else {
		err = run(*gazelle, *out, *linked, *module)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bazeldeps: %v\n", err)
		os.Exit(1)
	}
}

// writeModInfo writes the module information a go_binary links (its
// package's modinfo.bzl): each binary has its own, because it lists only
// the modules that binary links.
func writeModInfo(path, mainPkg string) error {
	text, err := bazeldeps.ModInfoBzl(".", mainPkg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

func run(gazelle, out, linked, module string) error {
	if module != "" {
		mods, err := bazeldeps.ListModules(".")
		if err != nil {
			return err
		}
		repos, err := bazeldeps.ReferencedRepos(".", mods)
		if err != nil {
			return err
		}
		text, err := os.ReadFile(module)
		if err != nil {
			return err
		}
		updated, err := bazeldeps.RewriteUseRepo(string(text), repos)
		if err != nil {
			return err
		}
		return os.WriteFile(module, []byte(updated), 0o644)
	}
	if gazelle == "" {
		return fmt.Errorf("-gazelle is required")
	}
	mods, err := bazeldeps.Generate(bazeldeps.Options{RepoRoot: ".", Out: out, Linked: linked, Gazelle: gazelle, Log: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bazeldeps: %d module repositories in %s\n", len(mods), out)
	return nil
}
