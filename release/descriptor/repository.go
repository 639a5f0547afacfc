package descriptor

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// RepositoryKind says whether a consumer can fetch an entrypoint source
// repository from where the release says it is.
type RepositoryKind int

const (
	// Fetchable is a network URL git clones from anywhere: https://,
	// ssh://, git://, or the scp-like [user@]host:path.
	Fetchable RepositoryKind = iota + 1
	// Local is a file-system path (absolute or relative) or a file://
	// URL: it names a directory on the builder's machine only.
	Local
)

func (k RepositoryKind) String() string {
	switch k {
	case Fetchable:
		return "fetchable"
	case Local:
		return "local"
	}
	return "unknown"
}

// UnpublishedRepository is what a release records as its entrypoint's
// repository when the builder allowed a local checkout. The builder's
// path would mean nothing on a consumer's machine, would publish the
// builder's file-system layout in a signed document, and would make the
// release bytes depend on where the checkout lies. A rebuild never clones
// the recorded repository anyway (it takes the checkout from
// release rebuild --source-repo), so nothing more than the commit is
// needed. It is neither a URL nor a name git would reach over a network.
const UnpublishedRepository = "(unpublished local checkout)"

// ErrRepository is why a repository string is neither a fetchable URL
// nor a local path (an unknown scheme, a credential in the URL, a
// leading dash git would read as an option).
var ErrRepository = errors.New("not a repository URL or path")

// fetchableSchemes are the URL schemes git fetches over a network.
// file:// is local; anything else (ext::, fd::, ftp://) is not something
// a consumer should be asked to clone from.
var fetchableSchemes = map[string]bool{"https": true, "http": true, "ssh": true, "git": true, "git+ssh": true, "ssh+git": true}

// scpHostRE is the [user@]host before the colon of an scp-like address.
// (An IPv6 host is written as a URL, ssh://[::1]/path.)
var scpHostRE = regexp.MustCompile(`^([A-Za-z0-9._~-]+@)?[A-Za-z0-9.-]+$`)

// ClassifyRepository says whether repo is Fetchable or Local, and returns
// the form to record: a URL with its scheme and host in lower case and
// no trailing slash. It follows git's own reading of a clone argument: a
// "scheme://" is a URL; otherwise a colon with no slash before it is the
// scp-like ssh form; anything else is a path. A URL holding a password
// is refused rather than cleaned: the release would publish it in signed
// documents, so the builder must see and fix it.
func ClassifyRepository(repo string) (string, RepositoryKind, error) {
	switch {
	case repo == "":
		return "", 0, fmt.Errorf("%w: empty", ErrRepository)
	case strings.IndexFunc(repo, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return "", 0, fmt.Errorf("%w: %q holds a control character", ErrRepository, repo)
	case strings.HasPrefix(repo, "-"):
		// git would read it as an option (the ssh "-oProxyCommand" trick).
		return "", 0, fmt.Errorf("%w: %q starts with a dash", ErrRepository, repo)
	}
	if scheme, _, ok := strings.Cut(repo, "://"); ok && !strings.Contains(scheme, "/") {
		return classifyURL(repo)
	}
	if strings.Contains(repo, "::") {
		// transport::address runs a git remote helper.
		return "", 0, fmt.Errorf("%w: %q is a git remote-helper address; give an https:// or ssh:// URL", ErrRepository, repo)
	}
	if host, path, ok := strings.Cut(repo, ":"); ok && !strings.Contains(host, "/") {
		if !scpHostRE.MatchString(host) || path == "" {
			return "", 0, fmt.Errorf("%w: %q is neither [user@]host:path nor a path (write ./%s for a directory)", ErrRepository, repo, repo)
		}
		return strings.TrimSuffix(repo, "/"), Fetchable, nil
	}
	return repo, Local, nil
}

// classifyURL reads a scheme://... repository.
func classifyURL(repo string) (string, RepositoryKind, error) {
	u, err := url.Parse(repo)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %v", ErrRepository, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "file" {
		return repo, Local, nil
	}
	if !fetchableSchemes[scheme] {
		return "", 0, fmt.Errorf("%w: %q: scheme %s is not one git fetches over a network (https, http, ssh, git)", ErrRepository, repo, u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", 0, fmt.Errorf("%w: %q has no host", ErrRepository, repo)
	}
	if _, has := u.User.Password(); has {
		return "", 0, fmt.Errorf("%w: %q holds a password or token, which the signed provenance would publish; give the URL without it", ErrRepository, u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", 0, fmt.Errorf("%w: %q has a query or fragment; give the plain repository URL", ErrRepository, repo)
	}
	if strings.Trim(u.Path, "/") == "" {
		return "", 0, fmt.Errorf("%w: %q names a host but no repository on it", ErrRepository, repo)
	}
	u.Scheme, u.Host = scheme, strings.ToLower(u.Host)
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String(), Fetchable, nil
}
