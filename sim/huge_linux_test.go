package sim

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// thpMode returns the system's transparent huge page setting: always,
// madvise or never ("" if it has none).
func thpMode(t *testing.T) string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	s := string(b)
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	require.True(t, 0 <= i && i < j, "unexpected THP setting %q", s)
	return s[i+1 : j]
}

// mapping is a range of the process's memory, and whether the kernel may
// back it with huge pages (THPeligible in /proc/self/smaps).
type mapping struct {
	start, end uintptr
	eligible   bool
}

func mappings(t *testing.T) []mapping {
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	var ms []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "THPeligible:"); ok && len(ms) > 0 {
			ms[len(ms)-1].eligible = strings.TrimSpace(v) == "1"
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			ms = append(ms, mapping{start: uintptr(start), end: uintptr(end)})
		}
	}
	require.NoError(t, sc.Err())
	return ms
}

// eligible returns how many of the n bytes at p may be huge pages.
func eligible(ms []mapping, p unsafe.Pointer, n uintptr) uintptr {
	lo, hi := uintptr(p), uintptr(p)+n
	var in uintptr
	for _, m := range ms {
		if m.eligible && m.start < hi && lo < m.end {
			in += min(hi, m.end) - max(lo, m.start)
		}
	}
	return in
}

// TestLargeArraysAskForHugePages checks that the arrays indexed by request
// and a large event queue's chunks are advised for huge pages, which under
// the "madvise" setting is what makes them eligible. (No memory of this
// process is eligible unless it was advised, so without the advice the
// test fails; memory advised by an earlier test and reused by another
// array may be eligible, so no array can serve as a control.)
func TestLargeArraysAskForHugePages(t *testing.T) {
	if mode := thpMode(t); mode != "madvise" {
		t.Skipf("transparent huge pages are %q: only under madvise does eligibility show the advice", mode)
	}
	reqs := hugeSlice[call](1 << 20) // 32 MiB
	q := newWheelQueue()
	for range 1600 * wheelBlockLen { // 100 MB of chunks, as 4M events take
		q.newChunk(&q.freeRing)
	}
	ms := mappings(t)

	size := uintptr(cap(reqs)) * unsafe.Sizeof(call{})
	got := eligible(ms, unsafe.Pointer(unsafe.SliceData(reqs)), size)
	assert.GreaterOrEqual(t, float64(got), 0.85*float64(size), "a 32 MiB request array: %d of %d bytes may be huge pages", got, size)

	var chunks, in uintptr
	for _, b := range q.blocks {
		n := uintptr(len(b)) * unsafe.Sizeof(wheelChunk{})
		chunks += n
		in += eligible(ms, unsafe.Pointer(&b[0]), n)
	}
	assert.GreaterOrEqual(t, float64(in), 0.5*float64(chunks), "the queue's chunks: %d of %d bytes may be huge pages", in, chunks)
	t.Logf("request array %.0f%%, chunks %.0f%% eligible", 100*float64(got)/float64(size), 100*float64(in)/float64(chunks))
	runtime.KeepAlive(reqs)
}
