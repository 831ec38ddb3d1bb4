package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
// summary.json (a herdlab output folder) or a manifest.json (a sweep's
// folder); any other is refused with ErrNotOutputDir. A dir that is a
// symbolic link is replaced where it points.
//
// First, it finishes what an earlier herdlab killed while replacing dir
// left undone (see Recover).
func StageDir(dir string) (*Stage, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if err := Recover(dir); err != nil {
		return nil, fmt.Errorf("cannot write the output folder %s: %w", dir, unwrapPath(err))
	}
	if err := replaceable(dir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("cannot write the output folder %s: %w", dir, unwrapPath(err))
	}
	tmp, err := os.MkdirTemp(parent, stagePrefix(dir, staged)+ownMark())
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
		if (e.Name() == "summary.json" || e.Name() == "manifest.json") && e.Type().IsRegular() {
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

// Keep names the files of the old folder (such as a sweep's
// manifest.json) that the new one keeps, unless it has its own: they
// are linked into the staged folder (copied where a link cannot be made)
// before the swap, so that the new folder holds them the instant it is
// in place. Folders need no naming: Commit carries every one over.
func (s *Stage) Keep(names ...string) error {
	for _, name := range names {
		from, to := filepath.Join(s.dir, name), filepath.Join(s.tmp, name)
		if _, err := os.Lstat(to); err == nil {
			continue // the new outputs have their own
		}
		info, err := os.Lstat(from)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return err
		case !info.Mode().IsRegular():
			return fmt.Errorf("results: %s is not a file to keep", from)
		}
		if err := os.Link(from, to); err != nil {
			if err := copyFile(from, to); err != nil {
				return err
			}
		}
	}
	return nil
}

// pauseInSwap, when set (by HERDLAB_TEST_PAUSE_IN_SWAP, for the tests
// that kill herdlab at the worst moment), is a file Commit creates right
// after the swap, before it carries the old folder's folders over, and
// then waits forever: a test kills it there.
var pauseInSwap = os.Getenv("HERDLAB_TEST_PAUSE_IN_SWAP")

// Commit swaps the staged folder in for the old one, atomically where the
// system can exchange two folders (Linux), else by two renames with an
// instant between them when the folder is absent. Then the folders inside
// the old folder (a sweep's, say) are moved into the new one, unless it
// has its own, and the old folder is removed. A process killed between
// the swap and the move leaves those folders in the old folder, hidden
// beside dir: the next StageDir (or Recover) of dir moves them back.
func (s *Stage) Commit() error {
	if err := syncDir(s.tmp); err != nil {
		return err
	}
	if _, err := os.Lstat(s.dir); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(s.tmp, s.dir); err != nil {
			return err
		}
		s.tmp = ""
		return syncDir(filepath.Dir(s.dir))
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
	if pauseInSwap != "" {
		os.WriteFile(pauseInSwap, nil, 0o644)
		select {}
	}
	if err := carryFolders(old, s.dir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// carryFolders moves the folders of from that to lacks into to.
func carryFolders(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	moved := false
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dst := filepath.Join(to, e.Name())
		if _, err := os.Lstat(dst); err == nil {
			continue // the new outputs have their own
		}
		if err := os.Rename(filepath.Join(from, e.Name()), dst); err != nil {
			return err
		}
		moved = true
	}
	if moved {
		return syncDir(to)
	}
	return nil
}

// The kinds of folders that replacing dir makes beside it: the staged
// new folder, and (without an exchange) the old one moved aside.
const (
	staged = ".new-"
	aside  = ".old-"
)

// stagePrefix is the start of the name of a folder of kind made beside
// dir to replace it.
func stagePrefix(dir, kind string) string { return "." + filepath.Base(dir) + kind }

// ownMark is the part of a staging name that says which process made it:
// its process id and a dash. Recover leaves alone what a live process is
// working on.
func ownMark() string { return strconv.Itoa(os.Getpid()) + "-" }

// abandoned reports whether the staging name, after its prefix, belongs
// to no live process: its process has ended, or the name carries none
// (an older herdlab's).
func abandoned(rest string) bool {
	id, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(id)
	if !ok || err != nil || pid <= 0 {
		return true
	}
	return pid != os.Getpid() && !alive(pid)
}

// Recover finishes what a herdlab killed while replacing the output
// folder dir left undone, and removes what it left: folders beside dir
// named .NAME.new-* or .NAME.old-* whose process has ended. Without dir,
// an old folder moved aside is moved back; otherwise the folders that a
// swap had yet to carry over (a sweep/) are moved into dir, unless dir
// has its own, and the rest is removed. Files being written into dir
// (.FILE.tmp*) by an ended process are removed too. What a live process
// is writing is left alone.
func Recover(dir string) error {
	parent := filepath.Dir(dir)
	entries, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, kind := range []string{aside, staged} {
		prefix := stagePrefix(dir, kind)
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), prefix)
			if !ok || !e.IsDir() || !abandoned(rest) {
				continue
			}
			left := filepath.Join(parent, e.Name())
			if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) && kind == aside {
				// Killed between moving the old folder aside and the
				// new one in: the old one goes back.
				if err := os.Rename(left, dir); err != nil {
					return err
				}
				continue
			}
			if _, err := os.Stat(dir); err == nil {
				if err := carryFolders(left, dir); err != nil {
					return err
				}
			}
			if err := os.RemoveAll(left); err != nil {
				return err
			}
		}
	}
	return RemoveStale(dir)
}

// RemoveStale removes the files that WriteFile was writing into dir
// (.FILE.tmp*) when its process ended.
func RemoveStale(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		i := strings.Index(name, ".tmp")
		if !strings.HasPrefix(name, ".") || i < 0 || e.IsDir() {
			continue
		}
		rest := strings.TrimPrefix(name[i+len(".tmp"):], "-")
		if abandoned(rest) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// copyFile copies the file from to the new file to, synced.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	return createSynced(to, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	})
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
