package main

import (
	"runtime/debug"
	"strings"
)

// version, when set at link time (-ldflags "-X main.version=..."), wins over
// the build information.
var version string

// buildVersion names this binary: the -X value if any, else the module
// version the go command stamped (a release tag for `go install
// module@version`, a pseudo-version from the checkout's VCS state since Go
// 1.24), else the VCS revision, else "devel" (a build with -buildvcs=false).
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(info)
}

func versionOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return strings.TrimSpace(rev)
}
