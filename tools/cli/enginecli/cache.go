package enginecli

import (
	"os"
	"path/filepath"

	"github.com/cacheon/engine/kernels/pyclosure"
)

// CacheEnv names the directory the caches kept between runs live in: the
// Python facts cache and the Debian package cache. "off" turns the facts
// cache off (Bazel actions run with it off: they keep nothing outside
// Bazel's own cache).
const CacheEnv = "CACHEON_CACHE"

// CacheRoot is $CACHEON_CACHE, else <user cache directory>/cacheon. ok is
// false when the variable says "off" or the user has no cache directory
// (no HOME): a shared temporary directory is never used, because another
// user could plant entries there.
func CacheRoot() (string, bool) {
	switch c := os.Getenv(CacheEnv); c {
	case "off":
		return "", false
	case "":
		d, err := os.UserCacheDir()
		if err != nil {
			return "", false
		}
		return filepath.Join(d, "cacheon"), true
	default:
		return c, true
	}
}

// pythonFactsCache is where bundle inspection keeps what it learned from
// each Python file, by content digest, so that `stack digest`, `stack
// plan`, `stack materialize` and `bundle inspect` parse a file once across
// runs. nil (no cache) when CacheRoot has none.
func pythonFactsCache() pyclosure.FactsCache {
	root, ok := CacheRoot()
	if !ok {
		return nil
	}
	return pyclosure.NewDirCache(root)
}
