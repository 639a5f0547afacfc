package base

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cacheon/engine/internal/reject"
)

// ErrMismatch is wrapped when fetched or cached bytes are not the ones the
// lock pins.
var ErrMismatch = reject.New("package bytes differ from the lock")

// Cache is a content-addressed directory of .deb files: each is stored
// as sha256/<hex>.deb once its bytes hashed to <hex>, so a package is
// downloaded once per machine and a stale or corrupt file is never used.
type Cache struct{ Dir string }

// Path is where the package with sha256 hex h lives in the cache.
func (c Cache) Path(h string) string { return filepath.Join(c.Dir, "sha256", h+".deb") }

// Read returns the cached bytes of p after checking size and sha256.
func (c Cache) Read(p Package) ([]byte, error) {
	b, err := os.ReadFile(c.Path(p.SHA256))
	if err != nil {
		return nil, err
	}
	if err := check(p, b); err != nil {
		return nil, fmt.Errorf("cached %s: %w", c.Path(p.SHA256), err)
	}
	return b, nil
}

func check(p Package, b []byte) error {
	sum := sha256.Sum256(b)
	if int64(len(b)) != p.Size || hex.EncodeToString(sum[:]) != p.SHA256 {
		return fmt.Errorf("%w: %s %s: %d bytes with sha256 %x, the lock pins %d bytes with sha256 %s",
			ErrMismatch, p.Name, p.Version, len(b), sum, p.Size, p.SHA256)
	}
	return nil
}

// FetchOptions say where packages come from.
type FetchOptions struct {
	// Mirror, when set, replaces the scheme and host of every locked URL
	// (snapshot.debian.org or an internal mirror serving the same pool).
	Mirror string
	// Client does the downloads (default: a client with a 5-minute timeout).
	Client *http.Client
	// Jobs is the number of parallel downloads (default 4).
	Jobs int
	// Progress, when set, is told about each download.
	Progress func(format string, args ...any)
}

// Fetch makes sure every package of l is in the cache, downloading the
// missing ones; bytes that do not match the lock are never stored.
// It returns the number of packages and bytes it downloaded.
func (c Cache) Fetch(ctx context.Context, l *Lock, opts FetchOptions) (n int, bytes int64, err error) {
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Minute}
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = 4
	}
	var missing []Package
	for _, p := range l.Packages {
		if _, err := c.Read(p); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, ErrMismatch) {
			return 0, 0, err
		}
		missing = append(missing, p)
	}
	if len(missing) == 0 {
		return 0, 0, nil
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "sha256"), 0o755); err != nil {
		return 0, 0, fmt.Errorf("package cache: %w", err)
	}
	if opts.Progress != nil {
		var total int64
		for _, p := range missing {
			total += p.Size
		}
		opts.Progress("fetching %d of %d packages (%.1f MB)", len(missing), len(l.Packages), float64(total)/1e6)
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan Package)
	)
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				err := c.download(ctx, client, p, opts.Mirror)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					n++
					bytes += p.Size
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range missing {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		next <- p
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return n, bytes, first
}

// URL is where p is fetched from, with mirror (if any) in place of the
// locked URL's scheme and host.
func URL(p Package, mirror string) string {
	if mirror == "" {
		return p.URL
	}
	u := p.URL
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.Index(u[i+3:], "/"); j >= 0 {
			u = u[i+3+j:]
		}
	}
	return strings.TrimSuffix(mirror, "/") + u
}

func (c Cache) download(ctx context.Context, client *http.Client, p Package, mirror string) error {
	u := URL(p, mirror)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", p.Name, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s %s: %w", p.Name, p.Version, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s %s from %s: HTTP %s (a package no longer on the mirror can be fetched from snapshot.debian.org with --mirror)", p.Name, p.Version, u, resp.Status)
	}
	// Read one byte past the pinned size, so a longer body is caught
	// without reading all of it.
	b, err := io.ReadAll(io.LimitReader(resp.Body, p.Size+1))
	if err != nil {
		return fmt.Errorf("fetch %s %s from %s: %w", p.Name, p.Version, u, err)
	}
	if err := check(p, b); err != nil {
		return fmt.Errorf("fetch %s: %w", u, err)
	}
	// Temp file, fsync, rename: a reader never sees a partial package.
	tmp, err := os.CreateTemp(filepath.Join(c.Dir, "sha256"), ".fetch-*")
	if err != nil {
		return fmt.Errorf("package cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("package cache: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("package cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("package cache: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("package cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.Path(p.SHA256)); err != nil {
		return fmt.Errorf("package cache: %w", err)
	}
	return nil
}
