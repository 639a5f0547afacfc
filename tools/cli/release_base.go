package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/base"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseBaseOptions are the flags of release base.
type releaseBaseOptions struct {
	platform, out string
	lock, cache   string
	mirror        string
	layers        int
	jsonOut       bool
}

func newReleaseBaseCommand(s Streams) *cobra.Command {
	var o releaseBaseOptions
	cmd := &cobra.Command{
		Use:   "base --out DIR [--lock FILE | --platform os/arch]",
		Short: "Write a base image as an OCI layout: from a lock of pinned Debian packages, or the empty scratch base",
		Long: `Write a base image as a new OCI image layout and print its manifest
digest, the pin "release build --base-digest" takes.

With --lock, the base is assembled from the lock's Debian packages
(deploy/base/*.lock.json): each .deb is fetched once into a
content-addressed cache (--cache), checked against its pinned sha256, and
its data archive is written, normalized, into deterministic layers; no
package manager or maintainer script runs. The same lock gives the same
digest on every machine. "release base lock" writes a lock.

Without --lock, it writes the project's empty base (no layers, an OCI
config naming only the platform), whose digest depends on the platform
alone; tests that need no Python use it.

A production base (a CUDA/PyTorch image) is pinned the same way: save it
as an OCI layout ("crane pull --format=oci IMAGE DIR") and pass
--base-layout DIR --base-digest sha256:... to release build.`,
		Example: `  # the servable CPU base of the main job (python3, torch)
  cacheon release base --lock deploy/base/debian-bookworm-python3-torch.lock.json --out base-layout

  # the empty base
  cacheon release base --out base-layout
  cacheon release base --platform linux/arm64 --out base-arm64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReleaseBase(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.platform, "platform", "linux/amd64", "platform os/arch[/variant] of the empty base (a lock names its own)")
	f.StringVar(&o.out, "out", "", "new OCI layout directory (required)")
	f.StringVar(&o.lock, "lock", "", "lock file of pinned Debian packages")
	f.StringVar(&o.cache, "cache", "", "content-addressed cache of fetched packages (default $CACHEON_CACHE/debs, else ~/.cache/cacheon/debs)")
	f.StringVar(&o.mirror, "mirror", "", "fetch from this mirror instead of the locked URLs' host (e.g. https://snapshot.debian.org/archive/debian/20261201T000000Z)")
	f.IntVar(&o.layers, "layers", base.DefaultLayers, "number of package layers (changes the digest)")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("out")
	cmd.AddCommand(newReleaseBaseLockCommand(s), newReleaseBaseFetchCommand(s))
	return cmd
}

// debCache is where fetched packages are kept between builds: flag, else
// the cache root's debs/, else a directory under the temporary directory
// (safe to share: every package is checked against its sha256 on use).
func debCache(flag string) string {
	if flag != "" {
		return flag
	}
	if root, ok := enginecli.CacheRoot(); ok {
		return filepath.Join(root, "debs")
	}
	return filepath.Join(os.TempDir(), "cacheon-debs")
}

func readLock(p string) (*base.Lock, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return base.ParseLock(p, b)
}

func baseProgress(s Streams) func(string, ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(s.Err, "cacheon release base: %s\n", fmt.Sprintf(format, args...))
	}
}

func runReleaseBase(ctx context.Context, s Streams, o releaseBaseOptions) error {
	if o.lock == "" {
		p, err := image.ParsePlatform(o.platform)
		if err != nil {
			return reject.Wrap(err)
		}
		d, err := image.WriteScratchLayout(o.out, p)
		if err != nil {
			return err
		}
		if o.jsonOut {
			return enginecli.WriteJSON(s.Out, map[string]any{"layout": o.out, "digest": d.String(), "name": "scratch", "platform": p.String()})
		}
		fmt.Fprintln(s.Out, d)
		return nil
	}
	l, err := readLock(o.lock)
	if err != nil {
		return err
	}
	progress := baseProgress(s)
	cache := base.Cache{Dir: debCache(o.cache)}
	if _, _, err := cache.Fetch(ctx, l, base.FetchOptions{Mirror: o.mirror, Progress: progress}); err != nil {
		return err
	}
	progress("assembling %s: %d packages into %d layers", l.Name, len(l.Packages), o.layers)
	res, err := base.Build(ctx, l, o.out, base.BuildOptions{Cache: cache, Layers: o.layers, Progress: progress})
	if err != nil {
		return err
	}
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, map[string]any{"layout": o.out, "digest": res.Digest.String(), "name": l.Name, "ref_name": res.RefName,
			"packages": len(l.Packages), "files": res.Files, "bytes": res.Bytes, "layers": res.Layers})
	}
	progress("%s: %d files, %.1f MB in %d layers", o.out, res.Files, float64(res.Bytes)/1e6, len(res.Layers))
	fmt.Fprintln(s.Out, res.Digest)
	return nil
}

// releaseBaseLockOptions are the flags of release base lock.
type releaseBaseLockOptions struct {
	out, update, name string
	requested, env    []string
	epoch             int64
}

func newReleaseBaseLockCommand(s Streams) *cobra.Command {
	var o releaseBaseLockOptions
	cmd := &cobra.Command{
		Use:   "lock (--update LOCK | --name NAME --request PKG...) --out FILE",
		Short: "Write a lock of Debian packages with apt: the closure of the requested packages, each pinned by sha256",
		Long: `Resolve the requested packages with this machine's apt (as on an empty
system, without recommends) and write the lock: every package of the
closure with its version, URL, size and sha256. Run "apt-get update"
first; review the lock and commit it.

--update re-resolves an existing lock with its name, requested packages,
environment, epoch and links: the way to take Debian's security updates.

Links stand in for what maintainer scripts would have set up (Debian's
alternatives, for one); add them to the lock by hand, each with the
script it replaces, and the build checks that each points into the base.`,
		Example: `  cacheon release base lock --update deploy/base/debian-bookworm-python3-torch.lock.json \
    --out deploy/base/debian-bookworm-python3-torch.lock.json
  cacheon release base lock --name debian-bookworm-python3 --request base-files --request python3 \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --out python3.lock.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReleaseBaseLock(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "lock file to write (required; replaced atomically)")
	f.StringVar(&o.update, "update", "", "re-resolve this lock, keeping its name, requests, environment, epoch and links")
	f.StringVar(&o.name, "name", "", "name of a new base")
	f.StringArrayVar(&o.requested, "request", nil, "package the base is for (repeat)")
	f.StringArrayVar(&o.env, "env", []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, "KEY=VALUE of the image config (repeat)")
	f.Int64Var(&o.epoch, "epoch", 0, "seconds since 1970 dating the base's own entries and config")
	cmd.MarkFlagRequired("out")
	return cmd
}

func runReleaseBaseLock(ctx context.Context, s Streams, o releaseBaseLockOptions) error {
	req := base.ResolveRequest{Name: o.name, Requested: o.requested, Env: o.env, Epoch: o.epoch}
	if o.update != "" {
		if o.name != "" || len(o.requested) > 0 {
			return reject.Errorf("--update takes the name and requested packages from %s: drop --name and --request", o.update)
		}
		old, err := readLock(o.update)
		if err != nil {
			return err
		}
		req = base.ResolveRequest{Name: old.Name, Requested: old.Requested, Env: old.Env, Links: old.Links, Epoch: old.Epoch}
	} else if o.name == "" || len(o.requested) == 0 {
		return reject.Errorf("name the base (--name) and its packages (--request), or give --update LOCK")
	}
	l, err := base.Resolve(ctx, req)
	if err != nil {
		return err
	}
	b, err := l.Marshal()
	if err != nil {
		return err
	}
	if err := atomicwrite.WriteFile(o.out, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(s.Err, "cacheon release base lock: %s: %d packages, %.1f MB to fetch\n", o.out, len(l.Packages), float64(l.DownloadSize())/1e6)
	return nil
}

// releaseBaseFetchOptions are the flags of release base fetch.
type releaseBaseFetchOptions struct {
	lock, cache, mirror string
	jsonOut             bool
}

func newReleaseBaseFetchCommand(s Streams) *cobra.Command {
	var o releaseBaseFetchOptions
	cmd := &cobra.Command{
		Use:   "fetch --lock FILE [--cache DIR]",
		Short: "Fetch a lock's packages into the cache, checking each against its sha256",
		Long: `Download every package of the lock that the cache does not hold yet,
checking each against its pinned size and sha256 before it is stored, so
that a later "release base --lock" builds offline.`,
		Example: `  cacheon release base fetch --lock deploy/base/debian-bookworm-python3-torch.lock.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReleaseBaseFetch(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.lock, "lock", "", "lock file (required)")
	f.StringVar(&o.cache, "cache", "", "content-addressed cache of fetched packages (default $CACHEON_CACHE/debs, else ~/.cache/cacheon/debs)")
	f.StringVar(&o.mirror, "mirror", "", "fetch from this mirror instead of the locked URLs' host")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("lock")
	return cmd
}

func runReleaseBaseFetch(ctx context.Context, s Streams, o releaseBaseFetchOptions) error {
	l, err := readLock(o.lock)
	if err != nil {
		return err
	}
	o.cache = debCache(o.cache)
	n, bytes, err := base.Cache{Dir: o.cache}.Fetch(ctx, l, base.FetchOptions{Mirror: o.mirror, Progress: baseProgress(s)})
	if err != nil {
		return err // a mismatch is base.ErrMismatch, a rejection
	}
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, map[string]any{"lock": o.lock, "cache": o.cache, "packages": len(l.Packages), "fetched": n, "fetched_bytes": bytes})
	}
	fmt.Fprintf(s.Out, "%d packages in %s (%d fetched, %.1f MB)\n", len(l.Packages), o.cache, n, float64(bytes)/1e6)
	return nil
}
