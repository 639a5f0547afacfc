package channel

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// HTTP is a channel served over HTTP(S): the channel directory's files
// under a base URL. Responses are read with the same size limit as files,
// and a 404 is a missing file.
type HTTP struct {
	Base    *url.URL
	Client  *http.Client
	Context context.Context
}

// NewHTTP parses a base URL (http or https).
func NewHTTP(ctx context.Context, base string) (*HTTP, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("channel URL %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("channel URL %q: want http or https", base)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return &HTTP{Base: u, Client: &http.Client{Timeout: 60 * time.Second}, Context: ctx}, nil
}

func (h *HTTP) String() string { return h.Base.String() }

// Read fetches name relative to the base URL.
func (h *HTTP) Read(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("channel file name %q is not a clean relative path", name)
	}
	ctx := h.Context
	if ctx == nil {
		ctx = context.Background()
	}
	u := h.Base.ResolveReference(&url.URL{Path: name})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w", u, fs.ErrNotExist)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	case resp.ContentLength > MaxFileBytes:
		return nil, fmt.Errorf("channel file %s is larger than %d bytes (Content-Length %d)", name, MaxFileBytes, resp.ContentLength)
	}
	return readLimited(resp.Body, name)
}

// OpenSource returns the Source for a channel location: an http(s) URL,
// or a directory.
func OpenSource(ctx context.Context, location string) (Source, error) {
	if strings.HasPrefix(location, "http://") || strings.HasPrefix(location, "https://") {
		return NewHTTP(ctx, location)
	}
	return Dir(location), nil
}
