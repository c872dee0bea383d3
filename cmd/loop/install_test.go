package main

import (
	"path/filepath"
	"runtime/debug"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// `go install github.com/loopdev/loop/cmd/loop@VERSION` fetches the module
// as a zip, and the go command refuses to make one of a tree holding a
// path it cannot unpack everywhere (engine/aux.go was one: "aux" is a
// reserved name on Windows). Files git ignores count too, so this checks
// the checkout as the release would be cut from it.
func TestModuleCanBePackagedForGoInstall(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files, err := zip.CheckDir(root)
	if err != nil {
		t.Fatalf("the module cannot be packaged: %v", err)
	}
	for _, f := range files.Invalid {
		t.Errorf("%s: %v", f.Path, f.Err)
	}
	if err := module.CheckPath("github.com/loopdev/loop"); err != nil {
		t.Fatal(err)
	}
}

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
