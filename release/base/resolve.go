package base

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ResolveRequest is what a lock is generated from.
type ResolveRequest struct {
	Name      string
	Requested []string
	Env       []string
	Links     []Link
	Epoch     int64
	// Run runs apt-get, apt-cache and dpkg (nil: exec on this machine).
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// OSRelease is the os-release file naming the distribution
	// (default /etc/os-release).
	OSRelease string
}

// Resolve generates a lock with apt: the closure of the requested
// packages as apt would install it on an empty system without
// recommends, each with the URL, size and sha256 of the .deb this
// machine's package lists name. Run "apt-get update" first for current
// lists; review the result and commit it.
func Resolve(ctx context.Context, req ResolveRequest) (*Lock, error) {
	run := req.Run
	if run == nil {
		run = func(ctx context.Context, name string, args ...string) ([]byte, error) {
			cmd := exec.CommandContext(ctx, name, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			// apt's messages must be in English for the parsers below.
			cmd.Env = append(os.Environ(), "LC_ALL=C")
			out, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
			}
			return out, nil
		}
	}
	empty := []string{"-o", "Dir::State::status=/dev/null", "-o", "APT::Install-Recommends=false", "-o", "APT::Install-Suggests=false"}
	arch, err := run(ctx, "dpkg", "--print-architecture")
	if err != nil {
		return nil, err
	}
	sim, err := run(ctx, "apt-get", append(append([]string{"-s"}, empty...), append([]string{"install"}, req.Requested...)...)...)
	if err != nil {
		return nil, err
	}
	insts, err := parseSimulation(sim)
	if err != nil {
		return nil, err
	}
	uris, err := run(ctx, "apt-get", append(append([]string{"--print-uris", "-qq"}, empty...), append([]string{"install"}, req.Requested...)...)...)
	if err != nil {
		return nil, err
	}
	urls, err := parseURIs(uris)
	if err != nil {
		return nil, err
	}
	var show []string
	for _, in := range insts {
		show = append(show, in.name+"="+in.version)
	}
	records, err := run(ctx, "apt-cache", append([]string{"show"}, show...)...)
	if err != nil {
		return nil, err
	}
	fields := parseRecords(records)
	osRelease := req.OSRelease
	if osRelease == "" {
		osRelease = "/etc/os-release"
	}
	rel, err := os.ReadFile(osRelease)
	if err != nil {
		return nil, fmt.Errorf("distribution: %w", err)
	}
	l := &Lock{
		FormatVersion: LockFormatVersion,
		Name:          req.Name,
		Distribution:  distribution(rel),
		Architecture:  strings.TrimSpace(string(arch)),
		Epoch:         req.Epoch,
		Requested:     append([]string(nil), req.Requested...),
		Env:           append([]string(nil), req.Env...),
		Links:         append([]Link(nil), req.Links...),
	}
	for _, in := range insts {
		f, ok := fields[in.name+"="+in.version]
		if !ok {
			return nil, fmt.Errorf("apt-cache show %s=%s: no record", in.name, in.version)
		}
		u, ok := urls[in.name+"="+in.version]
		if !ok {
			return nil, fmt.Errorf("apt-get --print-uris: no URL for %s %s", in.name, in.version)
		}
		size, _ := strconv.ParseInt(f["Size"], 10, 64)
		inst, _ := strconv.ParseInt(f["Installed-Size"], 10, 64)
		l.Packages = append(l.Packages, Package{
			Name: in.name, Version: in.version, Architecture: f["Architecture"], Source: f["Source"],
			URL: u, SHA256: f["SHA256"], Size: size, InstalledSize: inst,
		})
	}
	sort.Slice(l.Packages, func(i, j int) bool { return l.Packages[i].Name < l.Packages[j].Name })
	if err := l.Check("resolved lock"); err != nil {
		return nil, err
	}
	return l, nil
}

type inst struct{ name, version string }

// instLine is apt-get -s's line for a package it would unpack:
// "Inst libc6 (2.36-9+deb12u4 Debian:12.5/stable [amd64])".
var instLine = regexp.MustCompile(`^Inst (\S+) (?:\[\S+\] )?\((\S+) .*\)`)

func parseSimulation(out []byte) ([]inst, error) {
	var insts []inst
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := instLine.FindStringSubmatch(sc.Text()); m != nil {
			insts = append(insts, inst{name: m[1], version: m[2]})
		}
	}
	if len(insts) == 0 {
		return nil, fmt.Errorf("apt-get -s installs nothing: %s", strings.TrimSpace(string(out)))
	}
	return insts, nil
}

// parseURIs reads apt-get --print-uris lines ('URL' file size hash) into
// URLs by name=version, from the file name name_version_arch.deb.
func parseURIs(out []byte) (map[string]string, error) {
	urls := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[0], "'") {
			continue
		}
		u := strings.Trim(f[0], "'")
		parts := strings.Split(strings.TrimSuffix(f[1], ".deb"), "_")
		if len(parts) != 3 {
			return nil, fmt.Errorf("apt-get --print-uris: file name %q is not name_version_arch.deb", f[1])
		}
		version, err := url.PathUnescape(parts[1])
		if err != nil {
			return nil, fmt.Errorf("apt-get --print-uris: file name %q: %v", f[1], err)
		}
		if !strings.HasSuffix(u, ".deb") || path.Base(u) == "" {
			return nil, fmt.Errorf("apt-get --print-uris: %q is not a .deb URL", u)
		}
		urls[parts[0]+"="+version] = u
	}
	return urls, nil
}

// parseRecords reads apt-cache show paragraphs into their fields by
// name=version; a version listed by two archives keeps its first record.
func parseRecords(out []byte) map[string]map[string]string {
	recs := map[string]map[string]string{}
	for _, para := range strings.Split(string(out), "\n\n") {
		f := controlFields(para)
		if f["Package"] == "" {
			continue
		}
		key := f["Package"] + "=" + f["Version"]
		if _, dup := recs[key]; !dup {
			recs[key] = f
		}
	}
	return recs
}

// distribution names the os-release's distribution ("debian bookworm").
func distribution(osRelease []byte) string {
	vals := osReleaseFields(osRelease)
	d := strings.TrimSpace(vals["ID"] + " " + vals["VERSION_CODENAME"])
	if d == "" {
		return "unknown"
	}
	return d
}
