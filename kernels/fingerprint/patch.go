package fingerprint

import (
	"strings"
)

// normalizePatch is a dependency patch reduced to what the contributor
// wrote: for each patched file its path, the added lines and the removed
// lines, each normalized as CUDA/C++ (the patchable dependency files are
// CUDA sources). Context lines and hunk positions are the dependency's
// bytes, not the contribution's, and are left out, as are the git
// headers. It returns the rendered text and the token stream.
func normalizePatch(src []byte) (string, []string) {
	lines := strings.Split(string(src), "\n")
	var b strings.Builder
	var toks []string
	var added, removed []string
	path := ""
	flush := func() {
		if path == "" && len(added) == 0 && len(removed) == 0 {
			return
		}
		add := cudaLex(strings.Join(added, "\n"))
		del := cudaLex(strings.Join(removed, "\n"))
		b.WriteString("+++ " + path + "\n")
		b.WriteString(renderCUDA(add))
		b.WriteString("---\n")
		b.WriteString(renderCUDA(del))
		toks = append(toks, "+++", path, ";")
		toks = append(toks, cudaTokens(add)...)
		toks = append(toks, "---", ";")
		toks = append(toks, cudaTokens(del)...)
		added, removed, path = nil, nil, ""
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSuffix(lines[i], "\r")
		switch {
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			flush()
			path = strings.TrimSpace(strings.TrimPrefix(strings.TrimSuffix(lines[i+1], "\r"), "+++ "))
			if j := strings.IndexByte(path, '\t'); j >= 0 {
				path = path[:j]
			}
			path = strings.TrimPrefix(path, "b/")
			i++
		case strings.HasPrefix(l, "@@"), strings.HasPrefix(l, "\\"):
		case strings.HasPrefix(l, "+"):
			added = append(added, l[1:])
		case strings.HasPrefix(l, "-"):
			removed = append(removed, l[1:])
		}
	}
	flush()
	return b.String(), toks
}
