package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestMain lets a test run herdlab in a process of its own: the test
// binary, started with HERDLAB_TEST_MAIN=1, is herdlab.
func TestMain(m *testing.M) {
	if os.Getenv("HERDLAB_TEST_MAIN") == "1" {
		os.Exit(runMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// herdlabProcess starts herdlab in a process of its own.
func herdlabProcess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "HERDLAB_TEST_MAIN=1")
	return cmd
}

const smallSweep = "../../sweep/testdata/small.yaml"

var sweepFiles = []string{"sweep.csv", "sweep.json", "report.md", "heatmap-fixed-20s.svg", "heatmap-full-jitter.svg"}

// TestShardsInProcessesMergeToOneSweep runs a sweep in 4 shards, each in
// a process of its own, merges them, and gets the files of the unsharded
// sweep, byte for byte.
func TestShardsInProcessesMergeToOneSweep(t *testing.T) {
	whole := t.TempDir()
	code, out, errOut := herdlab("sweep", smallSweep, "--out", whole, "--format", "svg")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "small: 9 points x 2 strategies x 2 runs: ran 36 runs")
	assert.Contains(t, out, "Where recovery stops")
	assert.Contains(t, out, "full-jitter recovers")

	shards := t.TempDir()
	var procs []*exec.Cmd
	var dirs []string
	for i := 1; i <= 4; i++ {
		dir := filepath.Join(shards, "shard-"+string(rune('0'+i)))
		dirs = append(dirs, dir)
		p := herdlabProcess("sweep", smallSweep, "--shard", string(rune('0'+i))+"/4", "--out", dir, "--parallel", "1", "-q")
		p.Stderr = &strings.Builder{}
		require.NoError(t, p.Start())
		procs = append(procs, p)
	}
	for _, p := range procs {
		require.NoError(t, p.Wait(), p.Stderr)
	}
	merged := filepath.Join(shards, "merged")
	code, out, errOut = herdlab(append(append([]string{"merge"}, dirs...), "--out", merged, "--format", "svg")...)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "full-jitter recovers")
	for _, f := range sweepFiles {
		want, err := os.ReadFile(filepath.Join(whole, f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(merged, f))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), f)
	}
}

func TestSweepFromFlags(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := herdlab("sweep", "../../scenarios/thundering-herd.yaml", "--out", dir, "--strategy", "full-jitter", "--strategy", "fixed-60s",
		"--vary", "workload.requests=1000,20000", "--vary", "server.outages[0].duration=10s..40s:2", "--metric", "peak_load", "--no-charts")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "thundering-herd: 4 points x 2 strategies x 1 runs")
	csv, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	assert.Len(t, lines, 1+4*2)
	assert.True(t, strings.HasPrefix(lines[0], "point,workload.requests,server.outages[0].duration,strategy,run,recovered,"), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "0,1000,10s,fixed-60s,0,"), lines[1])
	assert.True(t, strings.HasPrefix(lines[8], "3,20000,40s,full-jitter,0,"), lines[8])
	assert.NoFileExists(t, filepath.Join(dir, "sweep.png"))

	// Run again: every run is found done.
	code, out, errOut = herdlab("sweep", "../../scenarios/thundering-herd.yaml", "--out", dir, "--strategy", "full-jitter", "--strategy", "fixed-60s",
		"--vary", "workload.requests=1000,20000", "--vary", "server.outages[0].duration=10s..40s:2", "--metric", "peak_load", "--no-charts")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ran 0 runs (0 events)")
	assert.Contains(t, out, "8 found done before")

	// Another metric charts the same runs: nothing runs again.
	code, out, errOut = herdlab("sweep", "../../scenarios/thundering-herd.yaml", "--out", dir, "--strategy", "full-jitter", "--strategy", "fixed-60s",
		"--vary", "workload.requests=1000,20000", "--vary", "server.outages[0].duration=10s..40s:2", "--metric", "delivered_ratio", "--no-charts")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ran 0 runs (0 events)")
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "## delivered_ratio\n")

	// Other values into the same folder: refused, nothing touched.
	code, _, errOut = herdlab("sweep", "../../scenarios/thundering-herd.yaml", "--out", dir, "--vary", "workload.requests=1000,30000", "--no-charts")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, errOut, "the folder holds another sweep")
}

func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{"sweep"}, "name one scenario file"},
		{"nothing to vary", []string{"sweep", "../../scenarios/thundering-herd.yaml"}, "nothing to vary"},
		{"bad vary", []string{"sweep", "../../scenarios/thundering-herd.yaml", "--vary", "workload.requests"}, "--vary workload.requests:"},
		{"bad value", []string{"sweep", "../../scenarios/thundering-herd.yaml", "--vary", "server.outages[0].duration=10s,-1s"}, "server.outages[0].duration=-1s"},
		{"bad path", []string{"sweep", "../../scenarios/thundering-herd.yaml", "--vary", "server.outages[3].duration=10s"}, "outages[3]"},
		{"bad metric", []string{"sweep", smallSweep, "--metric", "speed"}, `--metric "speed": not a figure`},
		{"bad shard", []string{"sweep", smallSweep, "--shard", "5/4"}, "--shard \"5/4\""},
		{"bad strategy", []string{"sweep", smallSweep, "--strategy", "nope"}, `no strategy "nope"`},
		{"bad format", []string{"sweep", smallSweep, "--format", "gif"}, "want png or svg"},
		{"invalid file", []string{"sweep", "../../scenarios/testdata/invalid/unknown-keys.yaml", "--vary", "seed=1,2"}, "unknown-keys.yaml:12:5"},
		{"merge nothing", []string{"merge"}, "name the folders"},
		{"merge not a sweep", []string{"merge", dir}, "not a sweep folder"},
		{"merge bad metric", []string{"merge", dir, "--metric", "x"}, `--metric "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, _, errOut := herdlab(append(tt.args, "--out", out)...)
			assert.Equal(t, exitBadInput, code, errOut)
			assert.Contains(t, errOut, tt.want)
			assert.NoDirExists(t, out, "nothing is written for bad input")
		})
	}
}

func TestMergeNamesMissingShards(t *testing.T) {
	base := t.TempDir()
	var dirs []string
	for _, sh := range []string{"1/3", "3/3"} {
		dir := filepath.Join(base, strings.ReplaceAll(sh, "/", "-"))
		code, _, errOut := herdlab("sweep", smallSweep, "--shard", sh, "--out", dir, "-q")
		require.Equal(t, exitOK, code, errOut)
		dirs = append(dirs, dir)
	}
	out := filepath.Join(base, "merged")
	code, _, errOut := herdlab(append(append([]string{"merge"}, dirs...), "--out", out)...)
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, errOut, "12 of the sweep's 36 runs are missing")
	assert.Contains(t, errOut, "shard(s) 2/3 not given")
	assert.NoDirExists(t, out)
}

// TestKubernetesRecipe runs the commands of the manifests in deploy/k8s
// as their pods would, one process per completion index, with the
// volumes as folders, and checks that the merge gives the unsharded
// sweep.
func TestKubernetesRecipe(t *testing.T) {
	// The manifests' commands as written; the detector watches the
	// sweep's parallel runs in sweep's tests and in
	// TestShardsInProcessesMergeToOneSweep.
	skipUnderRace(t)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	job := manifestContainer(t, "../../deploy/k8s/sweep.yaml")
	merge := manifestContainer(t, "../../deploy/k8s/merge.yaml")
	require.Equal(t, "Indexed", job.completionMode)
	require.Positive(t, job.completions)

	// herdlab on the PATH is this test binary.
	bin := t.TempDir()
	wrapper := "#!/bin/sh\nHERDLAB_TEST_MAIN=1 exec " + os.Args[0] + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "herdlab"), []byte(wrapper), 0o755))
	volume := t.TempDir()
	scenario, err := filepath.Abs(smallSweep)
	require.NoError(t, err)
	pod := func(c container, index int) {
		args := strings.ReplaceAll(c.args, "/scenario/scenario.yaml", scenario)
		args = strings.ReplaceAll(args, "/results", volume)
		cmd := exec.Command(sh, "-c", args)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "JOB_COMPLETION_INDEX="+strconv.Itoa(index))
		for k, v := range c.env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s\n%s", args, out)
	}
	for i := range job.completions {
		pod(job, i)
	}
	pod(merge, 0)

	whole := t.TempDir()
	code, _, errOut := herdlab("sweep", smallSweep, "--out", whole, "-q")
	require.Equal(t, exitOK, code, errOut)
	for _, f := range []string{"sweep.csv", "sweep.json", "report.md"} {
		want, err := os.ReadFile(filepath.Join(whole, f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(volume, "merged", f))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), f)
	}
}

// container is what TestKubernetesRecipe needs of a Job's manifest.
type container struct {
	completionMode string
	completions    int
	env            map[string]string
	args           string // the shell command
}

// manifestContainer reads the first Job of a manifest file.
func manifestContainer(t *testing.T, path string) container {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	type job struct {
		Kind string `yaml:"kind"`
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Template       struct {
				Spec struct {
					Containers []struct {
						Command []string `yaml:"command"`
						Args    []string `yaml:"args"`
						Env     []struct{ Name, Value string }
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var j job
		require.NoError(t, dec.Decode(&j), "%s has no Job", path)
		if j.Kind != "Job" {
			continue
		}
		cs := j.Spec.Template.Spec.Containers
		require.Len(t, cs, 1)
		require.Equal(t, []string{"sh", "-c"}, cs[0].Command)
		require.Len(t, cs[0].Args, 1)
		c := container{completionMode: j.Spec.CompletionMode, completions: j.Spec.Completions, env: map[string]string{}, args: cs[0].Args[0]}
		for _, e := range cs[0].Env {
			c.env[e.Name] = e.Value
		}
		return c
	}
}

func TestSweepChartsByNumberOfAxes(t *testing.T) {
	one := t.TempDir()
	code, _, errOut := herdlab("sweep", smallSweep, "--out", one, "-q", "--vary", "workload.requests=100..400:4")
	require.Equal(t, exitOK, code, errOut)
	assert.FileExists(t, filepath.Join(one, "sweep.png"), "one axis: a line chart")
	assert.NoFileExists(t, filepath.Join(one, "heatmap-full-jitter.png"))

	three := t.TempDir()
	code, out, errOut := herdlab("sweep", smallSweep, "--out", three, "--strategy", "full-jitter",
		"--vary", "workload.requests=100,200", "--vary", "server.outages[0].duration=5s,10s", "--vary", "server.queue=100,200")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "no charts for 3 varied fields")
	entries, err := os.ReadDir(three)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotEqual(t, ".png", filepath.Ext(e.Name()), "three axes: the table only")
	}
	report, err := os.ReadFile(filepath.Join(three, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "| workload.requests | server.outages[0].duration | server.queue | full-jitter |")
}

// TestSweepKilledInItsSwap kills (SIGKILL) a herdlab merge that rewrites
// a sweep's outputs with another metric, at the worst moment: its new
// outputs swapped in, the sweep's records not yet carried over. The
// outputs are all of one merge, never a new sweep.json beside an old
// report.md; the next sweep puts the records back, resumes with nothing
// to run, and leaves nothing of the killed one behind.
func TestSweepKilledInItsSwap(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sweep")
	code, _, errOut := herdlab("sweep", smallSweep, "--out", dir, "--format", "svg", "-q")
	require.Equal(t, exitOK, code, errOut)
	// A half-written file that an older herdlab, killed, left.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".report.md.tmp123456"), []byte("half"), 0o644))
	// A file of the user's, which the sweep's swap keeps.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))

	paused := filepath.Join(t.TempDir(), "paused")
	p := herdlabProcess("merge", dir, "--out", dir, "--metric", "delivered_ratio", "--format", "svg", "-q")
	p.Env = append(p.Env, "HERDLAB_TEST_PAUSE_IN_SWAP="+paused)
	var stderr bytes.Buffer
	p.Stderr = &stderr
	require.NoError(t, p.Start())
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(paused); err == nil {
			break
		}
		if time.Now().After(deadline) {
			p.Process.Kill()
			p.Wait()
			t.Fatalf("merge never reached its swap: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, p.Process.Signal(syscall.SIGKILL))
	p.Wait()

	// Every output is the killed merge's: of one generation.
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"metric": "delivered_ratio"`)
	assert.Contains(t, string(report), "delivered_ratio", "report.md is of the same merge as sweep.json")
	assert.FileExists(t, filepath.Join(dir, "manifest.json"), "the manifest is in the new folder from the start")
	assert.FileExists(t, filepath.Join(dir, "notes.txt"), "and so is the user's file")
	assert.NoDirExists(t, filepath.Join(dir, "records"), "killed before the records were carried over")

	// The next sweep finds its records and runs nothing again.
	code, out, errOut := herdlab("sweep", smallSweep, "--out", dir, "--format", "svg")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "ran 0 runs", "the records were put back")
	assert.DirExists(t, filepath.Join(dir, "records"))
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing left beside the sweep's folder")
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), "."), "left in the sweep's folder: %s", e.Name())
	}
	data, err = os.ReadFile(filepath.Join(dir, "sweep.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"metric": "peak_load"`)
	data, err = os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(data))
}
