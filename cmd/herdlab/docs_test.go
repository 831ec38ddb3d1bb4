package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docFiles are the README and the pages under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return append(files, "../../README.md")
}

// TestREADMEIsAFrontDoor: the README stays short enough to read in five
// minutes; the manual lives in docs/.
func TestREADMEIsAFrontDoor(t *testing.T) {
	lines := strings.Count(mustRead(t, "../../README.md"), "\n")
	assert.LessOrEqual(t, lines, 300, "README.md has %d lines: move the detail to a page under docs/", lines)
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinksResolve: every relative link of the README and the docs
// names a file or folder of the repository, and every #anchor a heading
// of the page it points into.
func TestDocsLinksResolve(t *testing.T) {
	for _, file := range docFiles(t) {
		text := mustRead(t, file)
		// Links inside code blocks are code, not links.
		text = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(text, "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: no such file in the repository", file, link)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") {
				if !hasHeading(mustRead(t, path), anchor) {
					t.Errorf("%s: link %q: %s has no heading #%s", file, link, path, anchor)
				}
			}
		}
	}
}

// hasHeading reports whether a Markdown page has a heading whose GitHub
// anchor is anchor.
func hasHeading(page, anchor string) bool {
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}

func TestHasHeading(t *testing.T) {
	page := "# herdlab\n\n## Sweeps: where recovery stops\n\n### A graph of services over real HTTP\n"
	assert.True(t, hasHeading(page, "sweeps-where-recovery-stops"))
	assert.True(t, hasHeading(page, "a-graph-of-services-over-real-http"))
	assert.False(t, hasHeading(page, "sweeps"))
}
