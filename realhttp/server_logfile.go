package realhttp

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// LogFile is a request log on disk of bounded size (for
// ServerOptions.Log): when a line would take the file past its bound,
// the file is renamed PATH.1 (replacing the one before) and a new PATH
// is begun, so that the log never takes more than about twice the bound.
// An existing PATH is kept, as PATH.1, when the log opens. A line is
// never split between two files. It is safe for concurrent use.
//
// Lines are written to the file in batches: a line reaches it within
// LogFileFlush of its Write, or sooner when LogFileBuffer bytes are
// waiting, and Close writes those still waiting. A write to the file
// per line took an eighth of herdlab serve's CPU time a request under
// wrk (perf). A process that is killed (SIGKILL) loses the lines of its
// last LogFileFlush at most.
type LogFile struct {
	path string
	max  int64

	mu        sync.Mutex
	f         *os.File
	buf       []byte      // lines not yet written to f
	flush     *time.Timer // armed while buf holds lines
	size      int64       // bytes of the current file, buf's included
	rotations int
	err       error // the first error, after which nothing is written
}

// LogFileFlush is the longest a line waits in a LogFile before it is
// written to the file, and LogFileBuffer the most bytes that wait.
const (
	LogFileFlush  = 100 * time.Millisecond
	LogFileBuffer = 64 << 10
)

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
// The caller has written out the lines waiting.
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

// Write adds p, a whole line or lines, to the current file (within
// LogFileFlush), first rotating when it would pass the bound. After an
// error, of this Write or of an earlier batch's, Write fails with it
// every time.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	if l.f == nil {
		return 0, fmt.Errorf("realhttp: log %s: closed", l.path)
	}
	if l.size > 0 && l.size+int64(len(p)) > l.max {
		if err := l.writeOutLocked(); err != nil {
			return 0, err
		}
		if err := l.rotate(); err != nil {
			l.err = fmt.Errorf("realhttp: log %s: %w", l.path, err)
			return 0, l.err
		}
	}
	l.buf = append(l.buf, p...)
	l.size += int64(len(p))
	if len(l.buf) >= LogFileBuffer {
		if err := l.writeOutLocked(); err != nil {
			return 0, err
		}
	} else if len(l.buf) == len(p) { // the first line waiting
		if l.flush == nil {
			l.flush = time.AfterFunc(LogFileFlush, l.flushWaiting)
		} else {
			l.flush.Reset(LogFileFlush)
		}
	}
	return len(p), nil
}

// flushWaiting writes the lines waiting to the file: LogFileFlush after
// the first of them.
func (l *LogFile) flushWaiting() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil && l.err == nil {
		_ = l.writeOutLocked()
	}
}

// writeOutLocked writes the lines waiting to the file; an error is kept
// (l.err), and returned.
func (l *LogFile) writeOutLocked() error {
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.f.Write(l.buf)
	l.buf = l.buf[:0]
	if err != nil {
		l.err = fmt.Errorf("realhttp: log %s: %w", l.path, err)
	}
	return l.err
}

// Rotations returns how many times the log has begun a new file since it
// opened.
func (l *LogFile) Rotations() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rotations
}

// Close writes the lines waiting, syncs and closes the current file,
// and returns the first error of any write.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flush != nil {
		l.flush.Stop()
	}
	if l.f == nil {
		return l.err
	}
	if l.err == nil {
		_ = l.writeOutLocked()
	}
	err := l.f.Sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return errors.Join(l.err, err)
}
