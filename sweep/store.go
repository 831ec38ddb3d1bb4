package sweep

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/zeontools/herdlab/results"
)

// A sweep folder keeps its records in segment files, records/seg-N.hlr:
// each writer of a sweep (a worker of one herdlab sweep command) appends
// the records of the units it runs to a segment of its own, so that a
// sweep of thousands of small runs writes a few files, not a file a run,
// which took most of its time beyond the runs.
//
// A segment is segmentMagic, holding the format's version, then frames:
// a record's length (4 bytes, little-endian), the CRC-32C of its bytes
// (4 bytes) and the record, as WriteRecord writes it. A frame cut short
// or garbled (the last writes before a power loss) ends what a reader
// takes from the segment: the units from there on are missing, and the
// sweep runs them again, after cutting the segment back to its last whole
// frame.
//
// Folders written before segments hold a file a record, named by its
// unit (p00000-s00-r0000.json); they are still read.
const (
	segmentMagic   = "herdlab records 1\n"
	segmentPrefix  = "seg-"
	segmentExt     = ".hlr"
	frameHeader    = 8
	maxRecordBytes = 64 << 20 // a length beyond this is damage, not a record
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stored is where a folder holds the record of a unit: its file and the
// place of its encoding there, with a digest of the encoding (two
// records of a unit are the same when their digests are) and what
// messages name it by. The record itself is not kept: it is read again
// when needed (see reader), a point at a time, so that gathering a
// sweep takes the memory of a point's records, not of all of them.
type stored struct {
	path     string // the file that holds it
	off      int64  // where its encoding starts in the file
	size     int    // the encoding's length
	sum      [sha256.Size]byte
	unit     int
	point    int
	strategy string
	run      int
}

// folder is what a sweep folder's records/ holds: the record of each unit
// found whole (nil when missing), the damage found, and the number the
// next segment takes.
type folder struct {
	units   []*stored
	damaged []damage
	next    int
}

// damage is a part of a file that holds no whole record: a segment from
// offset on (offset 0: all of it), or an older record file.
type damage struct {
	path   string
	offset int64
	err    error
}

func (d damage) Error() string { return d.path + ": " + d.where() }

// where says what of the file is damaged, and how.
func (d damage) where() string {
	if d.offset > 0 {
		return fmt.Sprintf("from byte %d: %v", d.offset, d.err)
	}
	return d.err.Error()
}

// readFolder reads the records of dir/records/ for spec. Its files are
// read in parallel: decoding the records is most of a merge's time.
func readFolder(spec *Spec, dir string) (*folder, error) {
	f := &folder{units: make([]*stored, spec.Units()), next: 1}
	entries, err := os.ReadDir(filepath.Join(dir, "records"))
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	var files []*file
	for _, e := range entries {
		name := e.Name()
		seg := strings.HasPrefix(name, segmentPrefix) && strings.HasSuffix(name, segmentExt)
		if seg {
			if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, segmentPrefix), segmentExt)); err == nil {
				f.next = max(f.next, n+1)
			}
		}
		if seg || strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
			files = append(files, &file{path: filepath.Join(dir, "records", name), segment: seg})
		}
	}
	next := make(chan *file)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for fl := range next {
				fl.read(spec)
			}
		})
	}
	for _, fl := range files {
		next <- fl
	}
	close(next)
	wg.Wait()
	for _, fl := range files {
		if fl.err != nil {
			return nil, fl.err
		}
		for _, s := range fl.records {
			if err := f.add(s); err != nil {
				return nil, err
			}
		}
		if fl.damage != nil {
			f.damaged = append(f.damaged, *fl.damage)
		}
	}
	return f, nil
}

// file is one file of records/, as read: its whole records, and the
// damage after them, or an error that stops the reading of the folder.
type file struct {
	path    string
	segment bool // else an older file of one record
	records []*stored
	damage  *damage
	err     error
}

// read reads the file's records, a frame at a time: a segment holds
// many, and only their places are kept.
func (fl *file) read(spec *Spec) {
	f, err := os.Open(fl.path)
	if err != nil {
		fl.err = err
		return
	}
	defer f.Close()
	if !fl.segment {
		data, err := io.ReadAll(f)
		if err != nil {
			fl.err = err
			return
		}
		if err := fl.decode(spec, data, 0); err != nil {
			fl.damage = &damage{path: fl.path, err: err}
		}
		return
	}
	r := bufio.NewReaderSize(f, 256<<10)
	if head, _ := r.Peek(len(segmentMagic)); !bytes.Equal(head, []byte(segmentMagic)) {
		head, _ = r.Peek(64)
		if v, ok := bytes.CutPrefix(head, []byte("herdlab records ")); ok && bytes.IndexByte(v, '\n') > 0 {
			fl.err = fmt.Errorf("%s: records of format version %s; this build of herdlab reads version 1", fl.path, v[:bytes.IndexByte(v, '\n')])
			return
		}
		fl.damage = &damage{path: fl.path, err: errors.New("not a herdlab records file, or cut short")}
		return
	}
	r.Discard(len(segmentMagic))
	off := int64(len(segmentMagic))
	var buf []byte
	for {
		rec, n, err := readFrame(r, &buf)
		if err == io.EOF {
			return
		}
		if err == nil {
			err = fl.decode(spec, rec, off+frameHeader)
		}
		if err != nil {
			fl.damage = &damage{path: fl.path, offset: off, err: err}
			return
		}
		off += int64(n)
	}
}

// readFrame reads the next frame from r into *buf, and returns its
// record and the frame's length; io.EOF at the end of the file.
func readFrame(r *bufio.Reader, buf *[]byte) (rec []byte, n int, err error) {
	var h [frameHeader]byte
	if k, err := io.ReadFull(r, h[:]); err != nil {
		if k == 0 && err == io.EOF {
			return nil, 0, io.EOF
		}
		return nil, 0, errors.New("cut short")
	}
	size := binary.LittleEndian.Uint32(h[:])
	if size > maxRecordBytes {
		return nil, 0, fmt.Errorf("a record of %d bytes: garbled", size)
	}
	if cap(*buf) < int(size) {
		*buf = make([]byte, size)
	}
	rec = (*buf)[:size]
	if _, err := io.ReadFull(r, rec); err != nil {
		return nil, 0, errors.New("cut short")
	}
	if crc32.Checksum(rec, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, 0, errors.New("garbled: its checksum does not match")
	}
	return rec, frameHeader + int(size), nil
}

// decode reads which unit a record of the file is, encoded in data at
// off, and keeps its place. It decodes only the record's unit (the
// record must be valid JSON): the record is decoded whole when its point
// is gathered, and decoding it here too took a third of a sweep's
// gathering.
func (fl *file) decode(spec *Spec, data []byte, off int64) error {
	var rec recordUnit
	if err := json.Unmarshal(data, &rec); err != nil {
		return err
	}
	k, err := spec.unitOf(rec)
	if err != nil {
		return err
	}
	_, si, _ := spec.unit(k)
	fl.records = append(fl.records, &stored{path: fl.path, off: off, size: len(data), sum: sha256.Sum256(data),
		unit: k, point: rec.Point, strategy: spec.Strategies[si], run: rec.Run})
	return nil
}

// recordUnit is the part of a results.RunRecord that names its unit.
type recordUnit struct {
	Point    int    `json:"point"`
	Strategy string `json:"strategy"`
	Run      int    `json:"run"`
}

// add adds a record of one of the folder's files, or of another folder,
// unless the folder has its unit's already; an error when that one
// differs.
func (f *folder) add(s *stored) error {
	if have := f.units[s.unit]; have != nil {
		return have.same(s)
	}
	f.units[s.unit] = s
	return nil
}

// same returns an error when s, a record of the same unit as r, differs.
func (r *stored) same(s *stored) error {
	if r.sum != s.sum {
		return fmt.Errorf("%s: point %d, %s, run %d differs from the same run in %s: were they run by different versions of herdlab?", s.path, s.point, s.strategy, s.run, r.path)
	}
	return nil
}

// repair removes the damaged parts of the folder's files: it cuts each
// damaged segment back to its last whole frame, and removes a damaged
// older record file, calling report with each first.
func (f *folder) repair(report func(path string, err error)) error {
	for _, d := range f.damaged {
		if report != nil {
			report(d.path, errors.New(d.where()))
		}
		if !strings.HasSuffix(d.path, segmentExt) || d.offset == 0 {
			if err := os.Remove(d.path); err != nil {
				return err
			}
			continue
		}
		if err := os.Truncate(d.path, d.offset); err != nil {
			return err
		}
	}
	f.damaged = nil
	return nil
}

// unitOf returns the unit a record is of, an error when it is of none of
// spec's.
func (s *Spec) unitOf(r recordUnit) (int, error) {
	si := slices.Index(s.Strategies, r.Strategy)
	if r.Point < 0 || r.Point >= s.Points || si < 0 || r.Run < 0 || r.Run >= s.Runs {
		return 0, fmt.Errorf("holds point %d, %s, run %d: not a run of this sweep", r.Point, r.Strategy, r.Run)
	}
	return (r.Point*len(s.Strategies)+si)*s.Runs + r.Run, nil
}

// segment is a segment file being written.
type segment struct {
	f    *os.File
	w    *bufio.Writer
	path string
}

// createSegment creates segment n in records, a folder.
func createSegment(records string, n int) (*segment, error) {
	path := filepath.Join(records, fmt.Sprintf("%s%06d%s", segmentPrefix, n, segmentExt))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	s := &segment{f: f, w: bufio.NewWriterSize(f, 256<<10), path: path}
	if _, err := s.w.WriteString(segmentMagic); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// encodeRecord encodes a record as a segment's frames hold it.
func encodeRecord(r *results.RunRecord) ([]byte, error) {
	var b bytes.Buffer
	if err := results.WriteRecord(&b, r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// append appends a frame of rec, a record's encoding.
func (s *segment) append(rec []byte) error {
	var h [frameHeader]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(rec)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(rec, castagnoli))
	if _, err := s.w.Write(h[:]); err != nil {
		return err
	}
	_, err := s.w.Write(rec)
	return err
}

// close writes out what the segment holds, makes it durable and closes
// it.
func (s *segment) close() error {
	err := s.w.Flush()
	if err == nil {
		err = s.f.Sync()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", s.path, err)
	}
	return nil
}

// writeSegment writes the records of recs, read by rd, as segment n of
// records, whole: a temporary file renamed into place once durable.
func writeSegment(records string, n int, rd *reader, recs []*stored) error {
	name := fmt.Sprintf("%s%06d%s", segmentPrefix, n, segmentExt)
	return results.WriteFile(filepath.Join(records, name), func(w io.Writer) error {
		s := &segment{w: bufio.NewWriter(w)}
		if _, err := s.w.WriteString(segmentMagic); err != nil {
			return err
		}
		for _, st := range recs {
			data, err := rd.data(st)
			if err != nil {
				return err
			}
			if err := s.append(data); err != nil {
				return err
			}
		}
		return s.w.Flush()
	})
}

// reader reads records again from their places in their folders' files,
// checking that each is still the record read before. Its segment files
// stay open until close; an older folder's record files are opened for
// each read. A reader is used by one goroutine.
type reader struct {
	files map[string]*os.File
	buf   []byte
}

func newReader() *reader { return &reader{files: map[string]*os.File{}} }

// data returns the encoding of the record s, valid until the next call.
func (rd *reader) data(s *stored) ([]byte, error) {
	if cap(rd.buf) < s.size {
		rd.buf = make([]byte, s.size)
	}
	buf := rd.buf[:s.size]
	f := rd.files[s.path]
	if f == nil {
		var err error
		if f, err = os.Open(s.path); err != nil {
			return nil, err
		}
		if strings.HasSuffix(s.path, segmentExt) {
			rd.files[s.path] = f
		} else {
			defer f.Close()
		}
	}
	if _, err := f.ReadAt(buf, s.off); err != nil {
		return nil, fmt.Errorf("reading point %d, %s, run %d again from %s: %w", s.point, s.strategy, s.run, s.path, err)
	}
	if sha256.Sum256(buf) != s.sum {
		return nil, fmt.Errorf("%s: point %d, %s, run %d changed while the sweep was gathered", s.path, s.point, s.strategy, s.run)
	}
	return buf, nil
}

// read returns the record s.
func (rd *reader) read(s *stored) (*results.RunRecord, error) {
	data, err := rd.data(s)
	if err != nil {
		return nil, err
	}
	rec, err := results.DecodeRecord(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	return rec, nil
}

// close closes the files the reader keeps open.
func (rd *reader) close() {
	for _, f := range rd.files {
		f.Close()
	}
	clear(rd.files)
}

// syncDir makes dir's entries durable: the names of the files created in
// it.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
