package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/internal/gcfloor"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// simulationFlags adds the flags of the commands that simulate: --runs,
// --seed (see override), --parallel and the limits (see readLimits).
func simulationFlags(fs *flag.FlagSet) {
	fs.Int("runs", 0, "independent replications (default: the scenario's runs)")
	fs.Uint64("seed", 0, "seed of the scenario; each run derives its own from it (default: the scenario's seed)")
	fs.Int("parallel", 0, "runs at once (default: the number of CPUs, fewer if memory is short)")
	limitFlags(fs)
}

// limitFlags adds --max-memory and --max-events (see readLimits).
func limitFlags(fs *flag.FlagSet) {
	fs.String("max-memory", "", "memory the runs may take, such as 8GiB or 500MB; 0 for no limit (default: 3/4 of this machine's, its control group's or the address-space limit (ulimit -v), whichever is lowest)")
	fs.Int64("max-events", sim.DefaultMaxEvents, "event budget of one run: a run that reaches it stops and fails")
}

// limits are what a command's runs may take.
type limits struct {
	memory int64 // bytes; 0: no limit
	events int64 // per run
	about  string
}

// readLimits reads --max-memory and --max-events, reporting a bad value;
// false then.
func readLimits(c *cli, fs *flag.FlagSet) (limits, bool) {
	var l limits
	l.events, _ = fs.GetInt64("max-events")
	if l.events < 1 {
		fmt.Fprintf(c.stderr, "herdlab %s: --max-events %d: want a number of events >= 1\n", fs.Name(), l.events)
		return l, false
	}
	text, _ := fs.GetString("max-memory")
	if text == "" {
		total, from := machineMemory()
		l.memory = total / 4 * 3
		l.about = fmt.Sprintf("3/4 of %s, %s", results.Bytes(total), from)
	} else {
		n, err := parseSize(text)
		if err != nil {
			fmt.Fprintf(c.stderr, "herdlab %s: --max-memory %q: %v\n", fs.Name(), text, err)
			return l, false
		}
		l.memory, l.about = n, "--max-memory"
	}
	// The heap floor runMain set yields to the limit, as sim.Estimate
	// counts it.
	gcfloor.Cap(uint64(sim.HeapFloorUnder(l.memory)))
	return l, true
}

// options returns sim.Options with the limits set.
func (l limits) options(o sim.Options) sim.Options {
	o.MaxMemory, o.MaxEvents = l.memory, l.events
	return o
}

// fit reports, for each scenario, the runs that cannot fit in memory, as
// bad input; false then.
func (l limits) fit(c *cli, loaded []*scenarios.Scenario, opts sim.Options) bool {
	ok := true
	for _, sc := range loaded {
		if _, err := sim.Fit(sc, l.options(opts), l.memory); err != nil {
			note := ""
			if strings.Contains(err.Error(), "--max-memory") {
				note = l.note()
			}
			fmt.Fprintf(c.stderr, "%v%s\n", err, note)
			ok = false
		}
	}
	return ok
}

// note says where the memory limit comes from, for a message that names it.
func (l limits) note() string {
	if l.about == "" || l.about == "--max-memory" {
		return ""
	}
	return "; by default " + l.about
}

// parseSize parses a size in bytes: 500MB, 8GiB, 2G, 1e9; a unit is a
// power of 1024 either way, as memory is counted.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	units := []struct {
		suffix []string
		mult   float64
	}{
		{[]string{"TiB", "TB", "T"}, 1 << 40},
		{[]string{"GiB", "GB", "G"}, 1 << 30},
		{[]string{"MiB", "MB", "M"}, 1 << 20},
		{[]string{"KiB", "KB", "K"}, 1 << 10},
		{[]string{"B"}, 1},
	}
find:
	for _, u := range units {
		for _, suffix := range u.suffix {
			if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(suffix)) {
				t, mult = strings.TrimSpace(t[:len(t)-len(suffix)]), u.mult
				break find
			}
		}
	}
	x, err := strconv.ParseFloat(t, 64)
	// NaN fails every comparison: it is refused with the infinities, and
	// with what would not fit an int64 (whose limit, 2^63, is exact in a
	// float64).
	if err != nil || !(x >= 0) || !(x*mult < math.MaxInt64) {
		return 0, errors.New("want a size such as 8GiB, 500MB or 0 for no limit")
	}
	return int64(x * mult), nil
}

// machineMemory returns the memory this process may use: the machine's,
// or its control group's limit, or its address-space limit (ulimit -v),
// whichever is lowest, and where that came from.
func machineMemory() (int64, string) {
	total, from := int64(0), "this machine's memory"
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if kb, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
				total = n << 10
			}
		}
		f.Close()
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total, from = n, "this control group's memory limit"
		}
	}
	if n, ok := addressSpaceLimit(); ok && (total == 0 || n < total) {
		total, from = n, "this process's address-space limit (ulimit -v)"
	}
	if total == 0 {
		total, from = 4<<30, "an assumed 4 GB (the machine's memory is unknown)"
	}
	return total, from
}

// override applies --runs and --seed to the scenarios and validates them
// again; false when one is now invalid (reported).
func override(c *cli, fs *flag.FlagSet, loaded []*scenarios.Scenario) bool {
	runs, _ := fs.GetInt("runs")
	seed, _ := fs.GetUint64("seed")
	for _, sc := range loaded {
		if fs.Changed("runs") {
			sc.Runs = runs
		}
		if fs.Changed("seed") {
			sc.Seed = seed
		}
		if err := sc.Validate(); err != nil {
			fmt.Fprintf(c.stderr, "herdlab %s: %s: %v\n", fs.Name(), sc.Name, err)
			return false
		}
	}
	return true
}

// loadToSimulate does what every command that simulates does first:
// reads --max-memory and --max-events, loads the files named, applies
// --runs and --seed, and checks that each scenario has the strategies in
// only. code is exitOK, or the exit code after a reported problem.
func loadToSimulate(c *cli, fs *flag.FlagSet, only []string) (lim limits, loaded []*scenarios.Scenario, code int) {
	lim, ok := readLimits(c, fs)
	if !ok {
		return lim, nil, exitBadInput
	}
	if loaded, code = loadScenarios(c, fs.Args()); code != exitOK {
		return lim, nil, code
	}
	if !override(c, fs, loaded) {
		return lim, nil, exitBadInput
	}
	for _, sc := range loaded {
		if err := sim.CheckStrategies(sc, only); err != nil {
			fmt.Fprintf(c.stderr, "herdlab %s: %v\n", fs.Name(), err)
			return lim, nil, exitBadInput
		}
	}
	return lim, loaded, exitOK
}

// loadScenarios loads every file, reporting every problem of every file.
// The code is exitOK, exitBadInput when a file is bad, or exitFailed when
// a signal came first (reported).
func loadScenarios(c *cli, files []string) ([]*scenarios.Scenario, int) {
	var loaded []*scenarios.Scenario
	code := exitOK
	for _, file := range files {
		sc, err := scenarios.LoadContext(c.ctx, file)
		if c.ctx.Err() != nil {
			c.interrupted("loading " + file)
			return nil, exitFailed
		}
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			code = exitBadInput
			continue
		}
		loaded = append(loaded, sc)
	}
	return loaded, code
}

// interrupted reports that a signal stopped the command while it was
// doing something, and that nothing was written.
func (c *cli) interrupted(doing string) {
	fmt.Fprintf(c.stderr, "herdlab: interrupted while %s: nothing was written\n", doing)
}

// done reports whether the command was interrupted (and says so).
func (c *cli) done(doing string) bool {
	if c.ctx.Err() == nil {
		return false
	}
	c.interrupted(doing)
	return true
}

// refuseLintErrors reports the findings of the lint rules that find
// errors (HL009 retry-spin) about the strategies in only (all when it is
// empty), as bad input: a run of them would only spin until its event
// budget (minutes of CPU for nothing), so no command runs them. false
// when there is one.
func refuseLintErrors(c *cli, loaded []*scenarios.Scenario, only []string) bool {
	ok := true
	for _, sc := range loaded {
		for _, f := range scenarios.LintErrors(sc, only) {
			fmt.Fprintf(c.stderr, "%s; refused: it would only spin until its event budget (fix it, or leave the strategy out with --strategy)\n", f)
			ok = false
		}
	}
	return ok
}
