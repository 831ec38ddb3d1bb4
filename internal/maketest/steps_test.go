// Package maketest checks that the Makefile's test targets leave no test
// out. It has tests only.
//
// make test runs every package with -short, twice (with the race
// detector, then without it, but for the packages it runs alone, whose
// tests skipped under the detector it names), so a test skipped under
// the detector still runs; a test that does less with -short must run in full somewhere:
// make test-long runs the tests the Makefile's LONG_TESTS names, in the
// packages LONG_PKGS names, without -short. The test here checks that
// the two lists name exactly the tests that call testing.Short.
package maketest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the module's directory, from this package's.
const root = "../.."

// shortened returns the Test functions of the module that call
// testing.Short, by package directory ("./sim"), and the functions other
// than tests that call it (which the Makefile could not name).
func shortened(t *testing.T) (tests map[string][]string, others []string) {
	t.Helper()
	tests = map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			// examples/clients is a module of its own, which make test
			// runs whole, without -short.
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "examples") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := "./" + filepath.ToSlash(rel)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !callsShort(fn.Body) {
				continue
			}
			if fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				if !slices.Contains(tests[pkg], fn.Name.Name) {
					tests[pkg] = append(tests[pkg], fn.Name.Name)
				}
				continue
			}
			others = append(others, pkg+": "+fn.Name.Name)
		}
		return nil
	})
	require.NoError(t, err)
	return tests, others
}

// callsShort reports whether n calls testing.Short.
func callsShort(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Short" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "testing" {
				found = true
			}
		}
		return !found
	})
	return found
}

// makeList returns the words of the Makefile variable name (NAME := words,
// continued over lines that end in a backslash).
func makeList(t *testing.T, makefile, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*:?=((?:[^\n]*\\\n)*[^\n]*)$`).FindStringSubmatch(makefile)
	require.NotNil(t, m, "the Makefile defines %s", name)
	return strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
}

func TestTestLongRunsEveryTestThatDoesLessWithShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	makefile := string(b)
	longTests := makeList(t, makefile, "LONG_TESTS")
	longPkgs := makeList(t, makefile, "LONG_PKGS")

	tests, others := shortened(t)
	assert.Empty(t, others, "these call testing.Short outside a Test function: call it in the test itself, so that the Makefile's LONG_TESTS can name the test that make test shortens")
	require.NotEmpty(t, tests, "the module's tests call testing.Short (is root the module?)")
	var names []string
	for pkg, fns := range tests {
		assert.Contains(t, longPkgs, pkg, "%s has tests that do less with -short (%s): the Makefile's LONG_PKGS must name it, for make test-long to run them in full", pkg, strings.Join(fns, ", "))
		for _, fn := range fns {
			assert.Contains(t, longTests, fn, "%s's %s does less with -short, which make test passes: the Makefile's LONG_TESTS must name it, for make test-long to run it in full", pkg, fn)
			names = append(names, fn)
		}
	}
	for _, fn := range longTests {
		assert.Contains(t, names, fn, "the Makefile's LONG_TESTS names %s, which is no test that calls testing.Short: make test runs it in full already, or it is gone", fn)
	}
	for _, pkg := range longPkgs {
		assert.Contains(t, tests, pkg, "the Makefile's LONG_PKGS names %s, which has no test that calls testing.Short", pkg)
	}
}

func TestTheTestTargetsRunEveryPackageWithShort(t *testing.T) {
	// make test passes -short to every step over every package, and make
	// test-long none: a test that does less with -short then runs in
	// full exactly in make test-long.
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	makefile := string(b)
	recipe := func(target string) string {
		m := regexp.MustCompile(`(?ms)^` + target + `:[^\n]*\n((?:\t[^\n]*\n)+)`).FindStringSubmatch(makefile)
		require.NotNil(t, m, "the Makefile has a %s target", target)
		return m[1]
	}
	// make test runs test-race and test-plain (at once), then the tests
	// of real time of ALONE_PKGS alone.
	test := recipe("test")
	assert.Contains(t, test, "$(MAKE) --no-print-directory -j2 -Oline test-race test-plain")
	var steps []string
	for _, r := range []string{recipe("test-race"), recipe("test-plain"), test} {
		for _, line := range strings.Split(r, "\n") {
			if strings.Contains(line, "$(GO) test") && !strings.Contains(line, "cd examples/clients") {
				steps = append(steps, line)
			}
		}
	}
	require.Len(t, steps, 3, "make test runs go test on herdlab's packages with the race detector, and without it, then ALONE_PKGS' tests of real time alone")
	for _, s := range steps {
		assert.Contains(t, s, " -short", "make test's step %q passes -short", s)
		assert.Contains(t, s, " -timeout ", "make test's step %q sets its timeout", s)
	}
	assert.Contains(t, steps[0], " -race")
	assert.NotContains(t, steps[0], " -run", "the race step runs whole packages")
	assert.NotContains(t, steps[1], " -race")
	assert.NotContains(t, steps[1], " -run", "the second step runs whole packages")
	assert.Contains(t, steps[1], "$$($(GO) list ./... | grep -v $(foreach p,$(ALONE_PKGS),", "the second step runs every package but ALONE_PKGS without the race detector, so that no test skipped under it is left out")
	assert.Contains(t, steps[2], "-run '^($(subst $(space),|,$(strip $(ALONE_TESTS))))$$' $(ALONE_PKGS)")
	assert.Contains(t, steps[2], " -p 1", "the tests of real time run alone")
	long := recipe("test-long")
	assert.NotContains(t, long, " -short")
	assert.Contains(t, long, " -timeout ")
}

// TestTheAlonePackagesLeaveNoTestOut: the second step leaves ALONE_PKGS
// out, whose tests ran under the race detector in the first; those of
// them that skip under it (a file built with !race, a call of
// skipUnderRace, a look at raceDetector) must be ALONE_TESTS, which run
// without it, or they would run nowhere.
func TestTheAlonePackagesLeaveNoTestOut(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	makefile := string(b)
	pkgs := makeList(t, makefile, "ALONE_PKGS")
	alone := makeList(t, makefile, "ALONE_TESTS")
	require.NotEmpty(t, pkgs)
	var skipping []string
	fset := token.NewFileSet()
	for _, pkg := range pkgs {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, pkg)
		for _, file := range files {
			f, err := parser.ParseFile(fset, file, nil, parser.ParseComments|parser.SkipObjectResolution)
			require.NoError(t, err)
			noRace := false
			for _, c := range f.Comments {
				for _, l := range c.List {
					if strings.HasPrefix(l.Text, "//go:build") && strings.Contains(l.Text, "!race") {
						noRace = true
					}
				}
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
					continue
				}
				if noRace || mentions(fn.Body, "skipUnderRace", "raceDetector", "raceEnabled") {
					skipping = append(skipping, fn.Name.Name)
					assert.Contains(t, alone, fn.Name.Name, "%s's %s skips under the race detector: the Makefile's ALONE_TESTS must name it, for make test to run it without", pkg, fn.Name.Name)
				}
			}
		}
	}
	for _, fn := range alone {
		assert.Contains(t, skipping, fn, "the Makefile's ALONE_TESTS names %s, which is no test of ALONE_PKGS that skips under the race detector", fn)
	}
}

// mentions reports whether n names any of the identifiers.
func mentions(n ast.Node, names ...string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && slices.Contains(names, id.Name) {
			found = true
		}
		return !found
	})
	return found
}
