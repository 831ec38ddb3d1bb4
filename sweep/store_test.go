package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
)

// segments returns the segment files of a sweep folder, in order.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "records", segmentPrefix+"*"+segmentExt))
	require.NoError(t, err)
	slices.Sort(paths)
	return paths
}

// frames returns the offsets of the frames of a segment, and its length.
func frames(t *testing.T, path string) ([]int64, int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), segmentMagic))
	var offs []int64
	r := bufio.NewReader(bytes.NewReader(data[len(segmentMagic):]))
	var buf []byte
	for off := int64(len(segmentMagic)); off < int64(len(data)); {
		_, n, err := readFrame(r, &buf)
		require.NoError(t, err)
		offs = append(offs, off)
		off += int64(n)
	}
	return offs, int64(len(data))
}

func TestASweepWritesAFewSegments(t *testing.T) {
	// A worker appends its records to a segment of its own: two workers,
	// two files, holding every unit once.
	plan := smallPlan(t)
	dir := t.TempDir()
	_, err := plan.Run(context.Background(), dir, Options{Parallel: 2})
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(dir, "records"))
	require.NoError(t, err)
	assert.Len(t, entries, 2)
	n := 0
	for _, path := range segments(t, dir) {
		offs, _ := frames(t, path)
		n += len(offs)
	}
	assert.Equal(t, plan.Spec.Units(), n)
}

// TestADamagedRecordIsRunAgain: a segment cut short (what a power loss
// can leave) or garbled holds no record from the damage on: merge counts
// those runs as missing, naming the file, and the sweep says so, cuts the
// segment back to its last whole record and runs them again, to the same
// outputs.
func TestADamagedRecordIsRunAgain(t *testing.T) {
	plan := smallPlan(t)
	dir := t.TempDir()
	runAll(t, plan, dir, 2)
	want := readFile(t, filepath.Join(dir, "sweep.csv"))
	segs := segments(t, dir)
	require.Len(t, segs, 2, "two workers'; merge had nothing to add")
	cut, garbled := segs[0], segs[1]

	offs, size := frames(t, cut)
	require.NoError(t, os.Truncate(cut, size-10)) // the last record cut short
	lostCut := 1
	offs2, _ := frames(t, garbled)
	data, err := os.ReadFile(garbled)
	require.NoError(t, err)
	at := offs2[2] + frameHeader + 20
	data[at] ^= 0xff // the third record garbled
	require.NoError(t, os.WriteFile(garbled, data, 0o644))
	lostGarbled := len(offs2) - 2

	_, err = Collect(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "of the sweep's 36 runs are missing")
	assert.Contains(t, err.Error(), "some are in damaged records, run again by the same sweep command: "+cut)
	assert.Contains(t, err.Error(), "checksum does not match")

	var damaged []string
	st, err := plan.Run(context.Background(), dir, Options{Damaged: func(path string, err error) { damaged = append(damaged, path) }})
	require.NoError(t, err)
	assert.Equal(t, []string{cut, garbled}, damaged)
	assert.Equal(t, lostCut+lostGarbled, st.Ran, "the damaged ones, and only they, run again")
	after, _ := frames(t, cut)
	assert.Equal(t, offs[:len(offs)-1], after, "cut back to its last whole record")

	rs, err := Collect(dir)
	require.NoError(t, err)
	_, err = Merge(dir, rs, plan.Metric, nil)
	require.NoError(t, err)
	assert.Equal(t, want, readFile(t, filepath.Join(dir, "sweep.csv")))
}

func TestAUnitInTwoFoldersMustBeTheSame(t *testing.T) {
	plan := smallPlan(t)
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		_, err := plan.Run(context.Background(), dir, Options{Parallel: 1})
		require.NoError(t, err)
	}
	rs, err := Collect(a, b)
	require.NoError(t, err, "the same runs twice are the same records")
	assert.Len(t, rs.units, plan.Spec.Units())
	assert.NotContains(t, rs.units, (*stored)(nil))

	// The eighth record of b (point 1, full-jitter, run 1) changed, with a checksum to match: another version of
	// herdlab, say.
	path := segments(t, b)[0]
	offs, _ := frames(t, path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	off := offs[7]
	size := binary.LittleEndian.Uint32(data[off:])
	rec := []byte(strings.Replace(string(data[off+frameHeader:off+frameHeader+int64(size)]), `"events":`, `"events":1`, 1))
	var frame []byte
	frame = binary.LittleEndian.AppendUint32(frame, uint32(len(rec)))
	frame = binary.LittleEndian.AppendUint32(frame, crc32.Checksum(rec, castagnoli))
	frame = append(frame, rec...)
	changed := append(append(slices.Clone(data[:off]), frame...), data[off+frameHeader+int64(size):]...)
	require.NoError(t, os.WriteFile(path, changed, 0o644))
	_, err = Collect(a, b)
	assert.ErrorContains(t, err, "point 1, full-jitter, run 1 differs from the same run in "+segments(t, a)[0])
}

func TestOlderFoldersStillRead(t *testing.T) {
	// A folder of the format before segments, a file a record, merges to
	// the same outputs, and a sweep resumed there runs only what is
	// missing; a segment of a later format is an error, not damage.
	plan := smallPlan(t)
	dir := t.TempDir()
	runAll(t, plan, dir, 2)
	want := readFile(t, filepath.Join(dir, "sweep.csv"))

	old := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(old, "records"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(old, "manifest.json"), []byte(readFile(t, filepath.Join(dir, "manifest.json"))), 0o644))
	rs, err := Collect(dir)
	require.NoError(t, err)
	rd := newReader()
	defer rd.close()
	for k, s := range rs.units {
		if k == 11 {
			continue // missing
		}
		p, st, r := plan.Spec.unit(k)
		name := filepath.Join(old, "records", fmt.Sprintf("p%05d-s%02d-r%04d.json", p, st, r))
		data, err := rd.data(s)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(name, data, 0o644))
	}
	st, err := plan.Run(context.Background(), old, Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, st.Ran)
	assert.Equal(t, plan.Spec.Units()-1, st.Skipped)
	rs, err = Collect(old)
	require.NoError(t, err)
	_, err = Merge(old, rs, plan.Metric, nil)
	require.NoError(t, err)
	assert.Equal(t, want, readFile(t, filepath.Join(old, "sweep.csv")))

	later := filepath.Join(dir, "records", segmentPrefix+"999999"+segmentExt)
	require.NoError(t, os.WriteFile(later, []byte("herdlab records 2\n..."), 0o644))
	_, err = Collect(dir)
	assert.ErrorContains(t, err, "records of format version 2; this build of herdlab reads version 1")
}

// TestBuildWritesTheCSVInItsPass: Build writes sweep.csv in its pass over
// the records, and Write takes it from there without reading them again
// (so it writes it with the records gone), to the bytes that reading them
// again gives; past csvBudget Build keeps none and Write reads them again.
func TestBuildWritesTheCSVInItsPass(t *testing.T) {
	plan := smallPlan(t)
	dir := t.TempDir()
	_, err := plan.Run(context.Background(), dir, Options{Parallel: 2})
	require.NoError(t, err)
	reread := func(s *results.Sweep, rs *Records) string {
		t.Helper()
		var b strings.Builder
		require.NoError(t, writeCSV(&b, s, &Records{Spec: rs.Spec, units: rs.units}))
		return b.String()
	}

	rs, err := Collect(dir)
	require.NoError(t, err)
	s, err := Build(rs, plan.Metric)
	require.NoError(t, err)
	require.NotNil(t, rs.csv)
	want := reread(s, rs)
	require.Equal(t, 1+plan.Spec.Units(), strings.Count(want, "\n"), "a header and a row a run")

	other, err := Build(&Records{Spec: rs.Spec, units: rs.units}, plan.Metric)
	require.NoError(t, err)
	require.NoError(t, os.Rename(filepath.Join(dir, "records"), filepath.Join(dir, "gone")))
	var b strings.Builder
	require.NoError(t, writeCSV(&b, s, rs), "from what Build kept")
	assert.Equal(t, want, b.String())
	assert.Error(t, writeCSV(new(strings.Builder), other, rs), "another sweep's: read again")
	require.NoError(t, os.Rename(filepath.Join(dir, "gone"), filepath.Join(dir, "records")))

	defer func(b int) { csvBudget = b }(csvBudget)
	csvBudget = len(want) / 2
	rs, err = Collect(dir)
	require.NoError(t, err)
	s, err = Build(rs, plan.Metric)
	require.NoError(t, err)
	assert.Nil(t, rs.csv, "past the budget")
	b.Reset()
	require.NoError(t, writeCSV(&b, s, rs))
	assert.Equal(t, want, b.String())
}

// TestCollectReadsOnlyWhichRunARecordIs: gathering a folder decodes only
// a record's unit; a record that is not JSON is still damage, run again.
func TestCollectReadsOnlyWhichRunARecordIs(t *testing.T) {
	tests := []struct {
		name   string
		record string
		unit   int
		err    string
	}{
		{"whole", `{"point":1,"strategy":"b","run":1,"figures":{"attempts":3}}`, (1*2+1)*2 + 1, ""},
		{"unit only", `{"point":0,"strategy":"a","run":0}`, 0, ""},
		{"not JSON", `{"point":0,"strategy":"a","run":0`, 0, "unexpected end of JSON input"},
		{"no run of the sweep", `{"point":4,"strategy":"a","run":0}`, 0, "holds point 4, a, run 0: not a run of this sweep"},
		{"another strategy", `{"point":0,"strategy":"c","run":0}`, 0, "not a run of this sweep"},
	}
	spec := &Spec{Points: 4, Strategies: []string{"a", "b"}, Runs: 2}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := &file{path: "seg"}
			err := fl.decode(spec, []byte(tt.record), 8)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, fl.records, 1)
			assert.Equal(t, tt.unit, fl.records[0].unit)
			assert.Equal(t, int64(8), fl.records[0].off)
			assert.Equal(t, len(tt.record), fl.records[0].size)
		})
	}
}
