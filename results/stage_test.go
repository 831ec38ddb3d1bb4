package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stageFiles writes generation gen of an output folder: the given names,
// each holding "gen".
func stageFiles(gen int, names ...string) []File {
	files := make([]File, len(names))
	for i, name := range names {
		files[i] = File{name, Raw(fmt.Appendf(nil, "%d", gen))}
	}
	return files
}

// folder returns the files of dir (not its folders) and their contents.
func folder(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		got[e.Name()] = string(data)
	}
	return got
}

// siblings lists what is beside dir in its parent, dir itself included.
func siblings(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func commit(t *testing.T, dir string, files []File) {
	t.Helper()
	st, err := StageDir(dir)
	require.NoError(t, err)
	require.NoError(t, st.WriteFiles(files))
	require.NoError(t, st.Commit())
}

func TestStageReplacesTheWholeFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "herd")
	commit(t, dir, stageFiles(1, "summary.json", "timeseries.csv", "load.png", "report.md"))
	assert.Equal(t, map[string]string{"summary.json": "1", "timeseries.csv": "1", "load.png": "1", "report.md": "1"}, folder(t, dir))

	// A re-run without charts leaves no chart of the first run behind.
	commit(t, dir, stageFiles(2, "summary.json", "timeseries.csv", "report.md"))
	assert.Equal(t, map[string]string{"summary.json": "2", "timeseries.csv": "2", "report.md": "2"}, folder(t, dir))
	assert.Equal(t, []string{"herd"}, siblings(t, dir), "no temporary folder is left")
}

func TestStageFailureLeavesTheOldFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "herd")
	commit(t, dir, stageFiles(1, "summary.json", "timeseries.csv", "report.md"))

	// The second run dies writing its second file: what a kill or a full
	// disk does. The old folder is as it was, whole.
	st, err := StageDir(dir)
	require.NoError(t, err)
	files := stageFiles(2, "summary.json", "timeseries.csv", "report.md")
	files[1].Write = func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("no space left on device")
	}
	err = st.WriteFiles(files)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "timeseries.csv"), "the error names the file")
	st.Abort()
	assert.Equal(t, map[string]string{"summary.json": "1", "timeseries.csv": "1", "report.md": "1"}, folder(t, dir))
	assert.Equal(t, []string{"herd"}, siblings(t, dir))
}

func TestStageKeepsSubfolders(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "herd")
	commit(t, dir, stageFiles(1, "summary.json"))
	sweep := filepath.Join(dir, "sweep")
	require.NoError(t, os.MkdirAll(filepath.Join(sweep, "records"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sweep, "sweep.csv"), []byte("points"), 0o644))

	commit(t, dir, stageFiles(2, "summary.json"))
	data, err := os.ReadFile(filepath.Join(sweep, "sweep.csv"))
	require.NoError(t, err, "a sweep kept in the run's folder survives the run")
	assert.Equal(t, "points", string(data))
	assert.DirExists(t, filepath.Join(sweep, "records"))
}

func TestStageRefusesAFolderItDidNotWrite(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "mine")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("years of work"), 0o644))

	_, err := StageDir(dir)
	require.ErrorIs(t, err, ErrNotOutputDir)
	assert.Contains(t, err.Error(), "thesis.tex")
	assert.Equal(t, map[string]string{"thesis.tex": "years of work"}, folder(t, dir))
	assert.Equal(t, []string{"mine"}, siblings(t, dir), "nothing was made")

	file := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = StageDir(file)
	require.ErrorIs(t, err, ErrNotOutputDir)

	// Empty folders, and folders of folders, are fine.
	empty := filepath.Join(root, "empty")
	require.NoError(t, os.MkdirAll(filepath.Join(empty, "sweep"), 0o755))
	commit(t, empty, stageFiles(1, "summary.json"))
	assert.DirExists(t, filepath.Join(empty, "sweep"))
}

func TestStageRefusesAnUnwritableParent(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes anywhere; a file in the way stops it all the same.
		parent := filepath.Join(t.TempDir(), "parent")
		require.NoError(t, os.WriteFile(parent, nil, 0o644))
		_, err := StageDir(filepath.Join(parent, "herd"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), filepath.Join(parent, "herd"))
		return
	}
	parent := t.TempDir()
	require.NoError(t, os.Chmod(parent, 0o555))
	t.Cleanup(func() { os.Chmod(parent, 0o755) })
	_, err := StageDir(filepath.Join(parent, "herd"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot write the output folder")
}

func TestStageFollowsASymlink(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	commit(t, real, stageFiles(1, "summary.json", "load.png"))
	link := filepath.Join(root, "link")
	require.NoError(t, os.Symlink(real, link))

	commit(t, link, stageFiles(2, "summary.json"))
	target, err := os.Readlink(link)
	require.NoError(t, err, "the link is still a link")
	assert.Equal(t, real, target)
	assert.Equal(t, map[string]string{"summary.json": "2"}, folder(t, real))
}

// TestStageReadersNeverSeeAMix reads the folder while it is replaced over
// and over: every read through one handle on the folder finds every file,
// all of one generation (or finds the folder gone from under it, once it
// was swapped out, and reads it again).
func TestStageReadersNeverSeeAMix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "herd")
	names := []string{"summary.json", "summary.csv", "timeseries.csv", "load.png", "report.md", "report.html"}
	commit(t, dir, stageFiles(0, names...))

	var stop atomic.Bool
	var reads, mixed, missing atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			root, err := os.OpenRoot(dir)
			if err != nil {
				missing.Add(1) // only without an exchange, between two renames
				continue
			}
			gens := map[string]bool{}
			gone := false
			for _, name := range names {
				data, err := root.ReadFile(name)
				if errors.Is(err, os.ErrNotExist) {
					gone = true // swapped out and being removed
					break
				}
				if err == nil {
					gens[string(data)] = true
				}
			}
			root.Close()
			if gone {
				continue
			}
			reads.Add(1)
			if len(gens) != 1 {
				mixed.Add(1)
			}
		}
	})
	for gen := 1; gen <= 100; gen++ {
		commit(t, dir, stageFiles(gen, names...))
	}
	stop.Store(true)
	wg.Wait()
	assert.Positive(t, reads.Load())
	assert.Zero(t, mixed.Load(), "a read found files of two runs")
	if exchange(t.TempDir(), t.TempDir()) == nil {
		assert.Zero(t, missing.Load(), "the folder was missing for a moment")
	}
	assert.Equal(t, "100", folder(t, dir)["summary.json"])
}

// TestStageWithoutExchange: where folders cannot be swapped in one step,
// the old folder is moved aside and the new one in, with the same result.
func TestStageWithoutExchange(t *testing.T) {
	defer func(f func(a, b string) error) { exchange = f }(exchange)
	exchange = func(a, b string) error { return errors.ErrUnsupported }
	dir := filepath.Join(t.TempDir(), "out.new-x", "herd") // a parent whose name looks like a staged folder's
	commit(t, dir, stageFiles(1, "summary.json", "load.png"))
	commit(t, dir, stageFiles(2, "summary.json"))
	assert.Equal(t, map[string]string{"summary.json": "2"}, folder(t, dir))
	assert.Equal(t, []string{"herd"}, siblings(t, dir), "no folder left aside")
}

// TestStageHelperProcess is the herdlab that TestStageKilledInTheSwap
// kills: it replaces the folder HERDLAB_STAGE_CHILD names with generation
// 2, pausing right after the swap (HERDLAB_TEST_PAUSE_IN_SWAP).
func TestStageHelperProcess(t *testing.T) {
	dir := os.Getenv("HERDLAB_STAGE_CHILD")
	if dir == "" {
		t.Skip("run by TestStageKilledInTheSwap")
	}
	commit(t, dir, stageFiles(2, "summary.json", "report.md"))
	t.Fatal("the commit should have paused in the swap")
}

// TestStageKilledInTheSwap kills (SIGKILL) a process that replaces an
// output folder at the worst moment: the new folder is in place, the old
// one's sweep/ not yet carried over. The next run finds the sweep where
// it was left and moves it back before anything else, and removes what
// the killed one left beside the folder and inside it.
func TestStageKilledInTheSwap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "herd")
	commit(t, dir, stageFiles(1, "summary.json", "report.md"))
	sweep := filepath.Join(dir, "sweep")
	require.NoError(t, os.MkdirAll(filepath.Join(sweep, "records"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sweep, "records", "seg-000001.hlr"), []byte("records"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sweep, "manifest.json"), []byte("{}"), 0o644))

	paused := filepath.Join(t.TempDir(), "paused")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStageHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HERDLAB_STAGE_CHILD="+dir, "HERDLAB_TEST_PAUSE_IN_SWAP="+paused)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(paused); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the helper never reached the swap: %s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	// Killed in the swap: the new files are in, the sweep stranded in
	// the hidden folder beside them.
	assert.Equal(t, map[string]string{"summary.json": "2", "report.md": "2"}, folder(t, dir))
	assert.NoDirExists(t, sweep)
	left := siblings(t, dir)
	require.Len(t, left, 2, "the killed run's folder is left beside: %v", left)
	// And a file half written by a killed run inside the folder.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".report.md.tmp123456"), []byte("half"), 0o644))

	// The next run puts the sweep back, and cleans up.
	commit(t, dir, stageFiles(3, "summary.json", "report.md"))
	assert.Equal(t, map[string]string{"summary.json": "3", "report.md": "3"}, folder(t, dir), "no half-written file left")
	data, err := os.ReadFile(filepath.Join(sweep, "records", "seg-000001.hlr"))
	require.NoError(t, err, "the sweep is back in its place")
	assert.Equal(t, "records", string(data))
	assert.FileExists(t, filepath.Join(sweep, "manifest.json"))
	assert.Equal(t, []string{"herd"}, siblings(t, dir), "nothing left beside the folder")
}

// TestRecoverLeavesALiveRunAlone: what a running herdlab is staging is
// not a leftover.
func TestRecoverLeavesALiveRunAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "herd")
	commit(t, dir, stageFiles(1, "summary.json"))
	st, err := StageDir(dir)
	require.NoError(t, err)
	require.NoError(t, st.WriteFiles(stageFiles(2, "summary.json")))
	require.NoError(t, Recover(dir))
	assert.DirExists(t, st.Path(), "this process is alive: its staged folder stays")
	require.NoError(t, st.Commit())
	assert.Equal(t, map[string]string{"summary.json": "2"}, folder(t, dir))

	// Without an exchange, a run killed between its two renames leaves
	// no folder at all: the old one, moved aside, goes back.
	aside := filepath.Join(filepath.Dir(dir), ".herd.old-999999999-1")
	require.NoError(t, os.Rename(dir, aside))
	require.NoError(t, Recover(dir))
	assert.Equal(t, map[string]string{"summary.json": "2"}, folder(t, dir))
	assert.Equal(t, []string{"herd"}, siblings(t, dir))
}
