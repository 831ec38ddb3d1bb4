// Command release writes herdlab's release archives with the Go toolchain
// alone: for each target OS/ARCH it cross-compiles herdlab (CGO_ENABLED=0,
// -trimpath, the version and commit stamped with -ldflags), packs the
// binary with LICENSE and README.md into herdlab_VERSION_OS_ARCH.tar.gz
// (.zip, with herdlab.exe, for windows), and lists the archives' SHA-256
// in SHA256SUMS, in the format `sha256sum -c` checks. make release runs
// it:
//
//	go run ./internal/release -version V -commit C -mtime UNIX -out dist [-targets "linux/arm64 ..."]
//
// The archives are reproducible: entries in a fixed order, every time
// -mtime (the commit's time), owner 0, modes 0755 for the binary and 0644
// for the rest, so one commit built by one toolchain gives the same
// bytes on any machine.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// defaultTargets are the OS/ARCH pairs a release holds.
var defaultTargets = []target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// sumsFile lists the archives' SHA-256.
const sumsFile = "SHA256SUMS"

type target struct{ OS, Arch string }

func (t target) String() string { return t.OS + "/" + t.Arch }

// exe is the binary's file name on the target.
func (t target) exe(name string) string {
	if t.OS == "windows" {
		return name + ".exe"
	}
	return name
}

// parseTargets reads OS/ARCH pairs separated by spaces or commas; none
// means defaultTargets.
func parseTargets(s string) ([]target, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' })
	if len(fields) == 0 {
		return defaultTargets, nil
	}
	var ts []target
	for _, f := range fields {
		os, arch, ok := strings.Cut(f, "/")
		if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("-targets: %q is not OS/ARCH, such as linux/arm64", f)
		}
		t := target{os, arch}
		if slices.Contains(ts, t) {
			return nil, fmt.Errorf("-targets: %s twice", t)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// options is one release.
type options struct {
	goCmd   string // the go command
	pkg     string // the main package to build, such as ./cmd/herdlab
	name    string // the binary's and the archives' name, such as herdlab
	version string // stamped as main.version, and in the archives' names
	commit  string // stamped as main.commit; may be empty
	mtime   time.Time
	out     string   // the folder the archives and SHA256SUMS go to
	files   []string // beside the binary in every archive, such as LICENSE
	targets []target
	log     io.Writer // one line per archive written
}

func (o options) check() error {
	var errs []error
	if o.version == "" || strings.ContainsAny(o.version, " \t\n/\\\"'") {
		errs = append(errs, fmt.Errorf("-version %q: want a version with no spaces, quotes or slashes, such as v0.3.0-12-gabcdef1", o.version))
	}
	if strings.ContainsAny(o.commit, " \t\n\"'") {
		errs = append(errs, fmt.Errorf("-commit %q: want a commit with no spaces or quotes", o.commit))
	}
	for _, f := range o.files {
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("-files: %w", err))
		}
	}
	return errors.Join(errs...)
}

// archiveName is the archive of target t, without its folder.
func (o options) archiveName(t target) string {
	base := fmt.Sprintf("%s_%s_%s_%s", o.name, o.version, t.OS, t.Arch)
	if t.OS == "windows" {
		return base + ".zip"
	}
	return base + ".tar.gz"
}

// release builds every target, writes its archive in o.out, then
// SHA256SUMS over the archives it wrote, and returns their names.
func release(ctx context.Context, o options) ([]string, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(o.out, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	var extra []entry
	for _, f := range o.files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		extra = append(extra, entry{name: filepath.Base(f), mode: 0o644, data: data})
	}
	sums := map[string][32]byte{}
	var names []string
	for _, t := range o.targets {
		bin := filepath.Join(work, t.OS+"_"+t.Arch, t.exe(o.name))
		if err := build(ctx, o, t, bin); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		entries := append([]entry{{name: t.exe(o.name), mode: 0o755, data: data}}, extra...)
		name := o.archiveName(t)
		var buf bytes.Buffer
		dir := strings.TrimSuffix(strings.TrimSuffix(name, ".zip"), ".tar.gz")
		if t.OS == "windows" {
			err = writeZip(&buf, dir, entries, o.mtime)
		} else {
			err = writeTarGz(&buf, dir, entries, o.mtime)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(o.out, name), buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		sums[name] = sha256.Sum256(buf.Bytes())
		names = append(names, name)
		if o.log != nil {
			fmt.Fprintf(o.log, "%s (%d bytes)\n", filepath.Join(o.out, name), buf.Len())
		}
	}
	var list bytes.Buffer
	writeSums(&list, sums)
	if err := os.WriteFile(filepath.Join(o.out, sumsFile), list.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return names, nil
}

// build cross-compiles o.pkg for t into bin: statically (CGO_ENABLED=0),
// without the builder's paths (-trimpath), stripped (-s -w), with the
// version and commit stamped.
func build(ctx context.Context, o options, t target, bin string) error {
	ldflags := "-s -w -X main.version=" + o.version
	if o.commit != "" {
		ldflags += " -X main.commit=" + o.commit
	}
	cmd := exec.CommandContext(ctx, o.goCmd, "build", "-trimpath", "-ldflags="+ldflags, "-o", bin, o.pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s: %w\n%s", o.pkg, t, err, stderr.Bytes())
	}
	return nil
}

// entry is one file of an archive.
type entry struct {
	name string
	mode fs.FileMode
	data []byte
}

// sorted returns the entries sorted by name, so that an archive does not
// depend on the order its files were given in.
func sorted(entries []entry) []entry {
	s := slices.Clone(entries)
	slices.SortFunc(s, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return s
}

// writeTarGz writes a gzipped tar of a folder dir holding the entries,
// sorted by name, every one owned by 0 and dated mtime: the same entries
// give the same bytes.
func writeTarGz(w io.Writer, dir string, entries []entry, mtime time.Time) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime = time.Time{} // none recorded; the entries carry mtime
	tw := tar.NewWriter(zw)
	mtime = mtime.UTC().Truncate(time.Second)
	hdr := func(name string, mode fs.FileMode, size int64, typ byte) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: int64(mode.Perm()), Size: size,
			ModTime: mtime, Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(hdr(dir+"/", 0o755, 0, tar.TypeDir)); err != nil {
		return err
	}
	for _, e := range sorted(entries) {
		if err := tw.WriteHeader(hdr(path.Join(dir, e.name), e.mode, int64(len(e.data)), tar.TypeReg)); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// writeZip writes a zip of a folder dir holding the entries, sorted by
// name, dated mtime, with their Unix modes: the same entries give the
// same bytes.
func writeZip(w io.Writer, dir string, entries []entry, mtime time.Time) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	mtime = mtime.UTC().Truncate(time.Second)
	d := &zip.FileHeader{Name: dir + "/", Method: zip.Store, Modified: mtime}
	d.SetMode(fs.ModeDir | 0o755)
	if _, err := zw.CreateHeader(d); err != nil {
		return err
	}
	for _, e := range sorted(entries) {
		h := &zip.FileHeader{Name: path.Join(dir, e.name), Method: zip.Deflate, Modified: mtime}
		h.SetMode(e.mode)
		f, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := f.Write(e.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// writeSums writes one line a file, sorted by name, in the format
// `sha256sum -c` reads: the hex digest, two spaces, the name.
func writeSums(w io.Writer, sums map[string][32]byte) {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s := sums[n]
		fmt.Fprintf(w, "%x  %s\n", s[:], n)
	}
}

func main() {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	o := options{log: os.Stdout}
	fs.StringVar(&o.goCmd, "go", "go", "the go command")
	fs.StringVar(&o.pkg, "pkg", "./cmd/herdlab", "the main package to build")
	fs.StringVar(&o.name, "name", "herdlab", "the binary's and the archives' name")
	fs.StringVar(&o.version, "version", "", "the version: stamped as main.version, and in the archives' names")
	fs.StringVar(&o.commit, "commit", "", "the commit, stamped as main.commit")
	mtime := fs.Int64("mtime", 0, "the archives' entries' time, in seconds since 1970 (the commit's time)")
	fs.StringVar(&o.out, "out", "dist", "the folder the archives and "+sumsFile+" go to")
	files := fs.String("files", "LICENSE README.md", "the files beside the binary in every archive")
	targets := fs.String("targets", "", "the OS/ARCH pairs to build, separated by spaces (default: all of a release)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	o.mtime = time.Unix(*mtime, 0)
	o.files = strings.Fields(*files)
	var err error
	if o.targets, err = parseTargets(*targets); err == nil {
		err = o.check()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(2)
	}
	if _, err := release(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: sha256sum -c it in %s\n", filepath.Join(o.out, sumsFile), o.out)
}
