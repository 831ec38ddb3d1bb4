package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/pe"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	mtime   = time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)
	entries = []entry{
		{name: "herdlab", mode: 0o755, data: []byte("\x7fELF a binary")},
		{name: "README.md", mode: 0o644, data: []byte("# herdlab\n")},
		{name: "LICENSE", mode: 0o644, data: []byte("MIT\n")},
	}
)

// archived is what an archive holds: each entry's name, mode, time and
// content, in the archive's order.
type archived struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
	data  string
}

func readTarGz(t *testing.T, b []byte) []archived {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var got []archived
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		assert.Zero(t, h.Uid, h.Name)
		assert.Zero(t, h.Gid, h.Name)
		assert.Empty(t, h.Uname, h.Name)
		got = append(got, archived{h.Name, h.FileInfo().Mode(), h.ModTime.UTC(), string(data)})
	}
}

func readZip(t *testing.T, b []byte) []archived {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	var got []archived
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		got = append(got, archived{f.Name, f.Mode(), f.Modified.UTC(), string(data)})
	}
	return got
}

// TestArchivesAreReproducible: the same files give the same bytes
// whatever order they come in, in a folder named after the archive,
// sorted, executable only for the binary, dated the commit's time.
func TestArchivesAreReproducible(t *testing.T) {
	reversed := []entry{entries[2], entries[1], entries[0]}
	want := []archived{
		{"herdlab_v1_linux_amd64/", fs.ModeDir | 0o755, mtime, ""},
		{"herdlab_v1_linux_amd64/LICENSE", 0o644, mtime, "MIT\n"},
		{"herdlab_v1_linux_amd64/README.md", 0o644, mtime, "# herdlab\n"},
		{"herdlab_v1_linux_amd64/herdlab", 0o755, mtime, "\x7fELF a binary"},
	}
	for _, format := range []struct {
		name  string
		write func(io.Writer, string, []entry, time.Time) error
		read  func(*testing.T, []byte) []archived
	}{
		{"tar.gz", writeTarGz, readTarGz},
		{"zip", writeZip, readZip},
	} {
		t.Run(format.name, func(t *testing.T) {
			var a, b, later bytes.Buffer
			require.NoError(t, format.write(&a, "herdlab_v1_linux_amd64", entries, mtime))
			require.NoError(t, format.write(&b, "herdlab_v1_linux_amd64", reversed, mtime.In(time.FixedZone("CET", 3600))))
			assert.Equal(t, a.Bytes(), b.Bytes(), "the same files, in another order and time zone, give other bytes")
			assert.Equal(t, want, format.read(t, a.Bytes()))

			require.NoError(t, format.write(&later, "herdlab_v1_linux_amd64", entries, mtime.Add(time.Hour)))
			assert.NotEqual(t, a.Bytes(), later.Bytes(), "the time is in the archive")
		})
	}
}

func TestParseTargets(t *testing.T) {
	tests := []struct {
		in      string
		want    []target
		wantErr string
	}{
		{"", defaultTargets, ""},
		{"linux/arm64", []target{{"linux", "arm64"}}, ""},
		{"windows/arm64, darwin/amd64", []target{{"windows", "arm64"}, {"darwin", "amd64"}}, ""},
		{"linux", nil, `"linux" is not OS/ARCH`},
		{"linux/", nil, `"linux/" is not OS/ARCH`},
		{"linux/arm/v7", nil, `"linux/arm/v7" is not OS/ARCH`},
		{"linux/arm64 linux/arm64", nil, "linux/arm64 twice"},
	}
	for _, tt := range tests {
		got, err := parseTargets(tt.in)
		if tt.wantErr != "" {
			assert.ErrorContains(t, err, tt.wantErr, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	assert.Len(t, defaultTargets, 6, "linux, darwin, windows x amd64, arm64")
}

// TestAReleaseOfAForeignTarget builds a small program (testdata/hello,
// with herdlab's stamped variables) for windows/arm64 the way make
// release builds herdlab: an arm64 Windows executable in a zip with the
// extra files, the version stamped, SHA256SUMS right; twice gives the
// same bytes. make release TARGETS=windows/arm64 in .ci/run does the same
// to herdlab itself.
func TestAReleaseOfAForeignTarget(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	require.NoError(t, err, "the test builds with the go command")
	dir := t.TempDir()
	license := filepath.Join(dir, "LICENSE")
	require.NoError(t, os.WriteFile(license, []byte("MIT\n"), 0o644))
	o := options{goCmd: goCmd, pkg: "./testdata/hello", name: "hello", version: "v9.8.7-stamped",
		commit: "0123456789abcdef", mtime: mtime, files: []string{license},
		targets: []target{{"windows", "arm64"}}}

	var archives [2][]byte
	for i := range archives {
		o.out = filepath.Join(dir, "dist", string(rune('a'+i)))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		names, err := release(ctx, o)
		cancel()
		require.NoError(t, err)
		require.Equal(t, []string{"hello_v9.8.7-stamped_windows_arm64.zip"}, names)
		archives[i], err = os.ReadFile(filepath.Join(o.out, names[0]))
		require.NoError(t, err)

		sums, err := os.ReadFile(filepath.Join(o.out, sumsFile))
		require.NoError(t, err)
		sum := sha256.Sum256(archives[i])
		assert.Equal(t, hex.EncodeToString(sum[:])+"  "+names[0]+"\n", string(sums))
		left, err := os.ReadDir(o.out)
		require.NoError(t, err)
		assert.Len(t, left, 2, "the archive and %s, no build folder left", sumsFile)
		if sha256sum, err := exec.LookPath("sha256sum"); err == nil {
			cmd := exec.Command(sha256sum, "-c", sumsFile)
			cmd.Dir = o.out
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "sha256sum -c %s: %s", sumsFile, out)
		}
	}
	assert.True(t, bytes.Equal(archives[0], archives[1]), "two releases of one commit differ")

	zr, err := zip.NewReader(bytes.NewReader(archives[0]), int64(len(archives[0])))
	require.NoError(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"hello_v9.8.7-stamped_windows_arm64/", "hello_v9.8.7-stamped_windows_arm64/LICENSE",
		"hello_v9.8.7-stamped_windows_arm64/hello.exe"}, names)
	rc, err := zr.File[2].Open()
	require.NoError(t, err)
	exe, err := io.ReadAll(rc)
	require.NoError(t, err)
	f, err := pe.NewFile(bytes.NewReader(exe))
	require.NoError(t, err, "hello.exe is a Windows executable")
	assert.Equal(t, uint16(pe.IMAGE_FILE_MACHINE_ARM64), f.Machine, "hello.exe is for arm64")
	assert.True(t, bytes.Contains(exe, []byte("v9.8.7-stamped")), "the version is stamped")
	assert.True(t, bytes.Contains(exe, []byte("0123456789abcdef")), "the commit is stamped")
}

// TestSumsAreWhatSha256sumChecks: one line a file, sorted, digest, two
// spaces, name.
func TestSumsAreWhatSha256sumChecks(t *testing.T) {
	var b bytes.Buffer
	writeSums(&b, map[string][32]byte{"b.zip": sha256.Sum256([]byte("b")), "a.tar.gz": sha256.Sum256([]byte("a"))})
	var lines []string
	for sc := bufio.NewScanner(&b); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	assert.Equal(t, []string{
		"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.tar.gz",
		"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.zip",
	}, lines)
	assert.False(t, strings.HasSuffix(b.String(), "\n\n"))
}
