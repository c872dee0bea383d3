package main

import (
	"runtime/debug"
	"testing"
)

// TestModuleZipAcceptsEveryFileName (module_test.go) guards that the module
// can be packaged for go install at all.

func TestVersionComesFromTheBuildInformation(t *testing.T) {
	// go install module@v1.2.3 stamps the module version.
	if got := versionOf(buildInfo("v1.2.3")); got != "v1.2.3" {
		t.Errorf("release: %q", got)
	}
	// A checkout built with VCS stamping: the pseudo-version.
	if got := versionOf(buildInfo("v0.0.0-20261201091045-e5e536a73cab")); got != "v0.0.0-20261201091045-e5e536a73cab" {
		t.Errorf("checkout: %q", got)
	}
	// No module version (a worktree, -buildvcs=false): the revision, else devel.
	if got := versionOf(buildInfo("(devel)", "vcs.revision", "e5e536a73cab500ee85076b4178af403f1f43a37", "vcs.modified", "true")); got != "e5e536a73cab-dirty" {
		t.Errorf("revision: %q", got)
	}
	if got := versionOf(buildInfo("(devel)")); got != "devel" {
		t.Errorf("nothing known: %q", got)
	}
}

func buildInfo(version string, settings ...string) *debug.BuildInfo {
	info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/loopdev/loop", Version: version}}
	for i := 0; i+1 < len(settings); i += 2 {
		info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return info
}
