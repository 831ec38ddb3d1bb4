package realhttp

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// LogFile is a request log on disk of bounded size (for
// ServerOptions.Log): when a line would take the file past its bound,
// the file is renamed PATH.1 (replacing the one before) and a new PATH
// is begun, so that the log never takes more than about twice the bound.
// An existing PATH is kept, as PATH.1, when the log opens. A line is
// never split between two files. It is safe for concurrent use.
type LogFile struct {
	path string
	max  int64

	mu        sync.Mutex
	f         *os.File
	size      int64
	rotations int
	err       error // the first error, after which nothing is written
}

// OpenLogFile opens the log at path, bounded to maxBytes a file (> 0).
// An existing log that is not empty is kept as PATH.1; an empty one is
// begun again, so that opening twice never replaces a PATH.1 with
// nothing.
func OpenLogFile(path string, maxBytes int64) (*LogFile, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("realhttp: log %s: the size bound must be > 0, got %d", path, maxBytes)
	}
	l := &LogFile{path: path, max: maxBytes}
	if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Size() == 0 {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("realhttp: log %s: %w", path, err)
		}
	}
	if err := l.rotate(); err != nil {
		return nil, fmt.Errorf("realhttp: log %s: %w", path, err)
	}
	l.rotations = 0
	return l, nil
}

// rotate moves the current file (if any) to PATH.1 and begins a new one.
func (l *LogFile) rotate() error {
	if l.f != nil {
		if err := l.f.Close(); err != nil {
			return err
		}
		l.f = nil
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	l.rotations++
	return nil
}

// Write writes p, a whole line or lines, to the current file, first
// rotating when it would pass the bound. After an error, Write fails
// with it every time.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	if l.size > 0 && l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			l.err = fmt.Errorf("realhttp: log %s: %w", l.path, err)
			return 0, l.err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	if err != nil {
		l.err = fmt.Errorf("realhttp: log %s: %w", l.path, err)
	}
	return n, err
}

// Rotations returns how many times the log has begun a new file since it
// opened.
func (l *LogFile) Rotations() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rotations
}

// Close syncs and closes the current file, and returns the first error
// of any write.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return l.err
	}
	err := l.f.Sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return errors.Join(l.err, err)
}
