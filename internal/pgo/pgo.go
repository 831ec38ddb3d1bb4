// Package pgo checks a profile for profile-guided optimisation (a
// package's default.pgo, which the go command builds it with) against
// herdlab's source: a profile of code that is gone optimises nothing.
package pgo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Check fails t when the profile's hottest herdlab functions (ten) are
// not all declared in the source under root, saying that remake, a
// command, makes the profile anew: what a package's test of its
// default.pgo calls.
func Check(t testing.TB, profile, root, remake string) {
	t.Helper()
	gone, listing, err := Gone(profile, root, 10)
	if err != nil {
		t.Fatalf("%v\n%s", err, listing)
	}
	if len(gone) > 0 {
		t.Errorf("%s's hottest functions are gone from herdlab's source: %s; make it anew with\n%s", profile, strings.Join(gone, ", "), remake)
	}
}

// entry is a line of go tool pprof -top: its function's package (a path
// inside herdlab) and, under it, the function.
var entry = regexp.MustCompile(`^\s*\S+\s+\S+%\s+\S+%\s+\S+\s+\S+%\s+github\.com/zeontools/herdlab/([a-z0-9/]+)\.(\S+)`)

// Gone returns those of the hottest herdlab functions of the profile
// (by flat time) that are no longer declared in the source under root
// (the module's directory), and pprof's listing; it is an error when the
// profile has fewer than hottest of herdlab's functions.
func Gone(profile, root string, hottest int) (gone []string, listing string, err error) {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=60", profile).Output()
	if err != nil {
		return nil, "", fmt.Errorf("go tool pprof -top %s: %w", profile, err)
	}
	found := 0
	for line := range strings.SplitSeq(string(out), "\n") {
		m := entry.FindStringSubmatch(line)
		if m == nil || found == hottest {
			continue
		}
		found++
		ok, err := declared(filepath.Join(root, m[1]), m[2])
		if err != nil {
			return nil, "", err
		}
		if !ok {
			gone = append(gone, m[1]+"."+m[2])
		}
	}
	if found < hottest {
		return nil, string(out), fmt.Errorf("%s has %d of herdlab's functions among its hottest, not %d", profile, found, hottest)
	}
	return gone, string(out), nil
}

// declared reports whether the function fn of pprof's naming (f,
// (*T).f, T.f, each maybe with .funcN closures) is declared in a Go file
// of dir.
func declared(dir, fn string) (bool, error) {
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
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		if decl.Match(src) {
			return true, nil
		}
	}
	return false, nil
}
