package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// exchange swaps two folders in one step where the system can; tests
// replace it to try the fallback.
var exchange = renameExchange

// ErrNotOutputDir is returned by StageDir for a folder that holds files
// herdlab did not write: replacing it would destroy them.
var ErrNotOutputDir = errors.New("results: not a herdlab output folder")

// Stage is an output folder being built beside its final place, to be
// swapped in whole by Commit, so that a reader of the folder sees the old
// complete folder or the new complete one, never a mix of the two, and
// no file of an earlier run survives beside a later run's.
//
// A Stage belongs to one goroutine.
type Stage struct {
	dir string // the final folder
	tmp string // the folder being built, beside dir
}

// StageDir prepares to replace the output folder dir as a whole. It makes
// a temporary folder beside dir (and dir's parent, if need be), which
// proves that dir can be written before any work is done. A dir that
// exists must be a folder that is empty, holds only folders, or holds a
// summary.json (a herdlab output folder); any other is refused with
// ErrNotOutputDir. A dir that is a symbolic link is replaced where it
// points.
func StageDir(dir string) (*Stage, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if err := replaceable(dir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("cannot write the output folder %s: %w", dir, unwrapPath(err))
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-")
	if err != nil {
		return nil, fmt.Errorf("cannot write the output folder %s: %w", dir, unwrapPath(err))
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return &Stage{dir: dir, tmp: tmp}, nil
}

// replaceable reports why dir may not be replaced, or nil.
func replaceable(dir string) error {
	info, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot write the output folder %s: %w", dir, unwrapPath(err))
	}
	if !info.IsDir() {
		return fmt.Errorf("%w: %s is a file", ErrNotOutputDir, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot write the output folder %s: %w", dir, unwrapPath(err))
	}
	var stray string
	for _, e := range entries {
		if e.Name() == "summary.json" && e.Type().IsRegular() {
			return nil
		}
		if !e.IsDir() && stray == "" {
			stray = e.Name()
		}
	}
	if stray == "" {
		return nil
	}
	return fmt.Errorf("%w: %s holds %s and no summary.json, so herdlab did not write it; name a new or empty folder", ErrNotOutputDir, dir, stray)
}

// Dir returns the folder that Commit replaces.
func (s *Stage) Dir() string { return s.dir }

// Path returns the temporary folder to write the new outputs into.
func (s *Stage) Path() string { return s.tmp }

// WriteFiles writes files into the staged folder, in order, each synced
// to disk.
func (s *Stage) WriteFiles(files []File) error {
	for _, f := range files {
		if err := createSynced(filepath.Join(s.tmp, f.Name), f.Write); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(s.dir, f.Name), err)
		}
	}
	return nil
}

// Commit swaps the staged folder in for the old one, atomically where the
// system can exchange two folders (Linux), else by two renames with an
// instant between them when the folder is absent. Folders inside the old
// folder (a sweep's, say) are carried over into the new one. The old
// files are removed.
func (s *Stage) Commit() error {
	if err := syncDir(s.tmp); err != nil {
		return err
	}
	entries, err := os.ReadDir(s.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.Rename(s.tmp, s.dir); err != nil {
			return err
		}
		return syncDir(filepath.Dir(s.dir))
	case err != nil:
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		to := filepath.Join(s.tmp, e.Name())
		if _, err := os.Lstat(to); err == nil {
			continue // the new outputs have their own
		}
		if err := os.Rename(filepath.Join(s.dir, e.Name()), to); err != nil {
			return err
		}
	}
	old := s.tmp // after an exchange, the old folder is where the new one was
	if err := exchange(s.tmp, s.dir); err != nil {
		// No exchange here: move the old folder aside, then the new in.
		old = filepath.Join(filepath.Dir(s.tmp), strings.Replace(filepath.Base(s.tmp), ".new-", ".old-", 1))
		if err := os.Rename(s.dir, old); err != nil {
			return err
		}
		if err := os.Rename(s.tmp, s.dir); err != nil {
			os.Rename(old, s.dir)
			return err
		}
	}
	s.tmp = ""
	if err := syncDir(filepath.Dir(s.dir)); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// Abort removes the staged folder; the old folder is left as it was. It
// does nothing after Commit.
func (s *Stage) Abort() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
		s.tmp = ""
	}
}

// createSynced creates path through write, and syncs it to disk.
func createSynced(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir syncs a folder's entries to disk, so that files made or
// renamed in it survive a power loss.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// unwrapPath returns the cause of a *PathError, whose path the caller
// names itself.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
