package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// profileEntry is a line of go tool pprof -top: its function's package
// (a path inside herdlab) and, under it, the function.
var profileEntry = regexp.MustCompile(`^\s*\S+\s+\S+%\s+\S+%\s+\S+\s+\S+%\s+github\.com/zeontools/herdlab/([a-z0-9/]+)\.(\S+)`)

// TestTheProfileIsOfThisCode checks that the functions default.pgo finds
// hottest in herdlab are still in its source: the go command builds the
// module with default.pgo, and a profile of code that is gone optimises
// nothing (BenchmarkAgainstNative measures what it gains). When the
// simulator is rewritten, it fails until the profile is made anew.
func TestTheProfileIsOfThisCode(t *testing.T) {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=60", "default.pgo").Output()
	require.NoError(t, err, "go tool pprof -top default.pgo")
	const hottest = 10
	var missing []string
	found := 0
	for _, line := range strings.Split(string(out), "\n") {
		m := profileEntry.FindStringSubmatch(line)
		if m == nil || found == hottest {
			continue
		}
		found++
		if !inSource(t, filepath.Join("..", "..", m[1]), m[2]) {
			missing = append(missing, m[1]+"."+m[2])
		}
	}
	require.Equal(t, hottest, found, "default.pgo has herdlab's hottest functions:\n%s", out)
	assert.Empty(t, missing, "default.pgo's hottest functions are gone from herdlab's source: make it anew with\n"+
		"go test ./web/wasm -pgo=off -run '^$' -bench '^BenchmarkProfile$' -benchtime 10x -cpuprofile web/wasm/default.pgo -o /tmp/wasm.test")
}

// inSource reports whether the function fn of pprof's naming (f,
// (*T).f, T.f, each maybe with .funcN closures) is declared in a Go file
// of dir.
func inSource(t *testing.T, dir, fn string) bool {
	t.Helper()
	fn = strings.TrimSuffix(fn, " (inline)")
	fn = regexp.MustCompile(`(\.func\d+)+$`).ReplaceAllString(fn, "")
	fn = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(fn, "")
	var decl *regexp.Regexp
	if recv, name, ok := strings.Cut(fn, "."); ok {
		recv = strings.Trim(recv, "(*)")
		decl = regexp.MustCompile(`(?m)^func \(\w+ \*?` + regexp.QuoteMeta(recv) + `(\[[^\]]*\])?\) ` + regexp.QuoteMeta(name) + `[\[(]`)
	} else {
		decl = regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(fn) + `[\[(]`)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if decl.Match(src) {
			return true
		}
	}
	return false
}
