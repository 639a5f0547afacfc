package descriptor

import (
	"errors"
	"strings"
	"testing"
)

// What a consumer can clone from anywhere, what only the builder's
// machine has, and what is neither.
func TestClassifyRepository(t *testing.T) {
	for _, tc := range []struct {
		repo, want string
		kind       RepositoryKind
	}{
		{"https://github.com/cacheon/engine.git", "https://github.com/cacheon/engine.git", Fetchable},
		{"HTTPS://GitHub.com/cacheon/engine/", "https://github.com/cacheon/engine", Fetchable},
		{"http://git.example.com/engine.git", "http://git.example.com/engine.git", Fetchable},
		{"https://git.example.com:8443/engine.git", "https://git.example.com:8443/engine.git", Fetchable},
		{"ssh://git@example.com/cacheon/engine.git", "ssh://git@example.com/cacheon/engine.git", Fetchable},
		{"ssh://git@example.com:2222/~/engine.git", "ssh://git@example.com:2222/~/engine.git", Fetchable},
		{"git://example.com/engine.git", "git://example.com/engine.git", Fetchable},
		{"git+ssh://example.com/engine.git", "git+ssh://example.com/engine.git", Fetchable},
		{"git@github.com:cacheon/engine.git", "git@github.com:cacheon/engine.git", Fetchable},
		{"example.com:engine.git/", "example.com:engine.git", Fetchable},
		{"ssh://[::1]/engine.git", "ssh://[::1]/engine.git", Fetchable},
		{"/home/builder/src/cacheon-engine", "/home/builder/src/cacheon-engine", Local},
		{".", ".", Local},
		{"../cacheon-engine", "../cacheon-engine", Local},
		{"cacheon-engine", "cacheon-engine", Local},
		{"~/src/engine", "~/src/engine", Local},
		{"./host:path", "./host:path", Local},
		{"/srv/a:b", "/srv/a:b", Local},
		{"file:///home/builder/src/cacheon-engine", "file:///home/builder/src/cacheon-engine", Local},
		{"FILE://localhost/srv/engine", "FILE://localhost/srv/engine", Local},
	} {
		t.Run(tc.repo, func(t *testing.T) {
			got, kind, err := ClassifyRepository(tc.repo)
			if err != nil || got != tc.want || kind != tc.kind {
				t.Fatalf("ClassifyRepository(%q) = %q, %v, %v; want %q, %v", tc.repo, got, kind, err, tc.want, tc.kind)
			}
		})
	}
}

func TestClassifyRepositoryRefuses(t *testing.T) {
	for _, tc := range []struct{ repo, want string }{
		{"", "empty"},
		{"https://example.com/a\nb", "control character"},
		{"-oProxyCommand=touch /tmp/x", "starts with a dash"},
		{"ext::sh -c touch% /tmp/x", "remote-helper"},
		{"ftp://example.com/engine.git", "scheme ftp"},
		{"https:///engine.git", "no host"},
		{"https://example.com", "no repository"},
		{"https://example.com/", "no repository"},
		{"https://user:s3cret@example.com/engine.git", "password or token"},
		{"https://example.com/engine.git?ref=main", "query or fragment"},
		{"https://example.com/engine.git#main", "query or fragment"},
		{"host name:path", "neither [user@]host:path"},
		{"example.com:", "neither [user@]host:path"},
	} {
		t.Run(tc.repo, func(t *testing.T) {
			_, _, err := ClassifyRepository(tc.repo)
			if !errors.Is(err, ErrRepository) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ClassifyRepository(%q): %v; want ErrRepository saying %q", tc.repo, err, tc.want)
			}
			if strings.Contains(tc.repo, "s3cret") && strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error repeats the password: %v", err)
			}
		})
	}
}
