package base

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cacheon/engine/internal/reject"
)

// debServer serves bodies by URL path and counts the requests.
type debServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string][]byte
	hits   map[string]int
}

func newDebServer(t *testing.T, bodies map[string][]byte) *debServer {
	s := &debServer{bodies: bodies, hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		b, ok := s.bodies[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *debServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.hits {
		n += h
	}
	return n
}

func (s *debServer) hit(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func urlPath(p Package) string { return strings.TrimPrefix(p.URL, "http://deb.example") }

// cached lists the cache's sha256 directory (nil when it does not exist).
func cached(t *testing.T, c Cache) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(c.Dir, "sha256"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestFetchDownloadsMissingPackagesOnce(t *testing.T) {
	a := newPkg(t, "liba", 10, dir("./usr/"), file("./usr/a", "a"))
	b := newPkg(t, "libb", 20, dir("./usr/"), file("./usr/b", "b"))
	c := newPkg(t, "libc", 30, dir("./usr/"), file("./usr/c", "c"))
	srv := newDebServer(t, map[string][]byte{urlPath(a.Package): a.Deb, urlPath(b.Package): b.Deb, urlPath(c.Package): c.Deb})
	l := lockOf(t, nil, a, b, c)
	// c is already in the cache: it is not fetched.
	cache := cacheWith(t, c)

	var progress []string
	opts := FetchOptions{Mirror: srv.URL, Jobs: 2, Progress: func(format string, args ...any) { progress = append(progress, format) }}
	n, size, err := cache.Fetch(context.Background(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || size != a.Size+b.Size {
		t.Errorf("fetched %d packages, %d bytes; want 2, %d", n, size, a.Size+b.Size)
	}
	if srv.hit(urlPath(c.Package)) != 0 || srv.requests() != 2 {
		t.Errorf("%d requests, want one each for liba and libb", srv.requests())
	}
	if len(progress) == 0 {
		t.Errorf("no progress reported")
	}
	for _, p := range []testPkg{a, b, c} {
		got, err := cache.Read(p.Package)
		if err != nil || !bytes.Equal(got, p.Deb) {
			t.Errorf("cache.Read(%s) = %d bytes, %v", p.Name, len(got), err)
		}
		fi, err := os.Stat(cache.Path(p.SHA256))
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, %v; want mode 0644", cache.Path(p.SHA256), fi, err)
		}
	}
	if names := cached(t, cache); len(names) != 3 {
		t.Errorf("cache holds %v, want the three packages and nothing else", names)
	}

	// A second fetch downloads nothing.
	n, size, err = cache.Fetch(context.Background(), l, opts)
	if err != nil || n != 0 || size != 0 || srv.requests() != 2 {
		t.Errorf("second fetch: %d packages, %d bytes, %v, %d requests in all", n, size, err, srv.requests())
	}

	// A cached file that no longer matches is fetched again.
	if err := os.WriteFile(cache.Path(a.SHA256), []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Read(a.Package); !errors.Is(err, ErrMismatch) {
		t.Errorf("Read of a corrupt cached file: %v, want ErrMismatch", err)
	}
	n, _, err = cache.Fetch(context.Background(), l, opts)
	if err != nil || n != 1 || srv.hit(urlPath(a.Package)) != 2 {
		t.Errorf("refetch: %d packages, %v, %d requests for liba", n, err, srv.hit(urlPath(a.Package)))
	}
	if got, err := cache.Read(a.Package); err != nil || !bytes.Equal(got, a.Deb) {
		t.Errorf("after refetch: %v", err)
	}
}

func TestFetchWithoutMirrorUsesTheLockedURL(t *testing.T) {
	a := newPkg(t, "liba", 1, file("./a", "a"))
	srv := newDebServer(t, map[string][]byte{"/debian/pool/liba.deb": a.Deb})
	a.URL = srv.URL + "/debian/pool/liba.deb"
	cache := Cache{Dir: filepath.Join(t.TempDir(), "not", "yet")}
	n, _, err := cache.Fetch(context.Background(), lockOf(t, nil, a), FetchOptions{})
	if err != nil || n != 1 {
		t.Fatalf("fetch: %d, %v", n, err)
	}
	if _, err := cache.Read(a.Package); err != nil {
		t.Error(err)
	}
}

func TestFetchRejectsOtherBytes(t *testing.T) {
	a := newPkg(t, "liba", 1, file("./a", "a"))
	other := newPkg(t, "liba", 1, file("./a", "not a"))
	cases := []struct {
		name string
		body []byte
	}{
		{"other package", other.Deb},
		{"truncated", a.Deb[:len(a.Deb)-1]},
		{"longer", append(bytes.Clone(a.Deb), 0)},
		{"empty", []byte{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newDebServer(t, map[string][]byte{urlPath(a.Package): c.body})
			cache := Cache{Dir: t.TempDir()}
			n, _, err := cache.Fetch(context.Background(), lockOf(t, nil, a), FetchOptions{Mirror: srv.URL})
			if !errors.Is(err, ErrMismatch) || !reject.Is(err) {
				t.Fatalf("err = %v, want ErrMismatch", err)
			}
			if !strings.Contains(err.Error(), "liba") {
				t.Errorf("err = %v does not name the package", err)
			}
			if n != 0 {
				t.Errorf("counted %d packages", n)
			}
			if names := cached(t, cache); len(names) != 0 {
				t.Errorf("cache holds %v after a mismatch", names)
			}
		})
	}
}

func TestFetchNamesAMissingPackage(t *testing.T) {
	a := newPkg(t, "liba", 1, file("./a", "a"))
	b := newPkg(t, "libgone", 1, file("./b", "b"))
	srv := newDebServer(t, map[string][]byte{urlPath(a.Package): a.Deb})
	cache := Cache{Dir: t.TempDir()}
	_, _, err := cache.Fetch(context.Background(), lockOf(t, nil, a, b), FetchOptions{Mirror: srv.URL, Jobs: 1})
	if err == nil || !strings.Contains(err.Error(), "libgone 1.0-1") || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want it to name libgone and the status", err)
	}
	if _, err := cache.Read(b.Package); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("libgone in the cache: %v", err)
	}
}

func TestFetchStopsWhenCancelled(t *testing.T) {
	a := newPkg(t, "liba", 1, file("./a", "a"))
	srv := newDebServer(t, map[string][]byte{urlPath(a.Package): a.Deb})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cache := Cache{Dir: t.TempDir()}
	if _, _, err := cache.Fetch(ctx, lockOf(t, nil, a), FetchOptions{Mirror: srv.URL}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if srv.requests() != 0 {
		t.Errorf("%d requests after cancel", srv.requests())
	}
}

func TestURLReplacesSchemeAndHost(t *testing.T) {
	p := Package{URL: "http://deb.debian.org/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb"}
	cases := []struct {
		mirror, want string
	}{
		{"", p.URL},
		{"https://mirror.example", "https://mirror.example/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb"},
		{"https://mirror.example/", "https://mirror.example/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb"},
		{"https://snapshot.debian.org/archive/20250101T000000Z/", "https://snapshot.debian.org/archive/20250101T000000Z/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb"},
	}
	for _, c := range cases {
		if got := URL(p, c.mirror); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.mirror, got, c.want)
		}
	}
}
