package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVersionSaysWhereItCameFrom: each source of herdlab version's
// version and commit, in the order versionLine prefers them.
func TestVersionSaysWhereItCameFrom(t *testing.T) {
	devel := &debug.BuildInfo{Main: debug.Module{Path: "github.com/zeontools/herdlab", Version: "(devel)"}}
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/zeontools/herdlab", Version: "v0.3.0"}}
	inACheckout := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{
			Main: debug.Module{Path: "github.com/zeontools/herdlab", Version: "(devel)"},
			Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
				{Key: "vcs.modified", Value: modified},
			},
		}
	}
	tests := []struct {
		name            string
		stamped, commit string
		info            *debug.BuildInfo
		want            string
	}{
		{"make build: git describe stamped, no commit recorded (-buildvcs=false)",
			"v0.3.0-12-gabcdef1", "", devel,
			"v0.3.0-12-gabcdef1 (go1.26.8, linux/amd64)"},
		{"make release: version and commit stamped",
			"v0.3.0-12-gabcdef1", "abcdef1234567890abcdef1234567890abcdef12", devel,
			"v0.3.0-12-gabcdef1 (commit abcdef1234567890abcdef1234567890abcdef12, go1.26.8, linux/amd64)"},
		{"a stamped commit wins over the one the go command recorded",
			"v0.3.0", "abcdef1234567890abcdef1234567890abcdef12", inACheckout("false"),
			"v0.3.0 (commit abcdef1234567890abcdef1234567890abcdef12, go1.26.8, linux/amd64)"},
		{"go install module@v0.3.0: the module's version",
			"", "", installed,
			"v0.3.0 (go1.26.8, linux/amd64)"},
		{"go build in a clean checkout with -buildvcs: the revision recorded",
			"", "", inACheckout("false"),
			"(devel) (commit 0123456789abcdef0123456789abcdef01234567, go1.26.8, linux/amd64)"},
		{"go build in a checkout with changes: the revision, dirty",
			"", "", inACheckout("true"),
			"(devel) (commit 0123456789abcdef0123456789abcdef01234567-dirty, go1.26.8, linux/amd64)"},
		{"nothing stamped, nothing recorded",
			"", "", devel,
			"(devel) (go1.26.8, linux/amd64)"},
		{"no build information at all",
			"", "", nil,
			"(devel) (go1.26.8, linux/amd64)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, versionLine(tt.stamped, tt.commit, tt.info, "go1.26.8", "linux/amd64"))
		})
	}
}

// TestVersion: herdlab version and herdlab --version print the same
// line, with what the Makefile stamps, the toolchain and the platform.
func TestVersion(t *testing.T) {
	code, out, _ := herdlab("version")
	assert.Equal(t, exitOK, code)
	code, flagOut, _ := herdlab("--version")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, out, flagOut, "--version is the version command")

	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v0.3.0-12-gabcdef1", "abcdef1234567890abcdef1234567890abcdef12"
	_, out, _ = herdlab("--version")
	assert.Equal(t, "herdlab v0.3.0-12-gabcdef1 (commit abcdef1234567890abcdef1234567890abcdef12, "+
		runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")\n", out)
}
