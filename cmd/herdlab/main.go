// Command herdlab studies thundering herds: it runs every retry strategy
// of a scenario file against the same server and outage and shows what
// each does to the server.
//
// Run `herdlab help` for the commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/internal/gcfloor"
	"github.com/zeontools/herdlab/sim"
)

// version and commit are stamped at build time by make (build, install,
// release, image): -ldflags "-X main.version=... -X main.commit=...".
// Empty, herdlab version says what the go command recorded instead (see
// versionLine).
var version, commit = "", ""

// Exit codes, as in DESIGN.md.
const (
	exitOK       = 0
	exitFailed   = 1 // a check failed or the run failed
	exitBadInput = 2 // unreadable or invalid scenario, bad flags
)

// command is one subcommand: its flags are parsed by run itself.
type command struct {
	summary string
	usage   string // after "herdlab NAME "
	flags   func(*flag.FlagSet)
	run     func(c *cli, fs *flag.FlagSet) int
}

// cli is what every command writes to, and the context that SIGINT and
// SIGTERM cancel.
type cli struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

var commands = map[string]*command{
	"check":    checkCmd,
	"merge":    mergeCmd,
	"sweep":    sweepCmd,
	"dlq":      dlqCmd,
	"import":   importCmd,
	"init":     initCmd,
	"replay":   replayCmd,
	"serve":    serveCmd,
	"run":      runCmd,
	"ui":       uiCmd,
	"validate": validateCmd,
	"version":  versionCmd,
}

func main() { os.Exit(runMain(os.Args[1:])) }

// runMain runs the command line args on the standard streams until
// SIGINT or SIGTERM, and returns the exit code. The first signal asks the
// command to stop (within a second, keeping what is done); a second one
// ends the process at once. It owns the process's collector: a heap
// floor (internal/gcfloor) spares small runs most of their collections;
// GOGC in the environment overrides it, --max-memory bounds it.
func runMain(args []string) int {
	gcfloor.Set(sim.HeapFloor)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	return run(ctx, args, os.Stdout, os.Stderr)
}

// run runs the command line args until ctx is done and returns the exit
// code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		c.usage(stderr)
		return exitBadInput
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "--help":
		return c.help(rest)
	case "--version":
		name = "version"
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "herdlab: unknown command %q\n\n", name)
		c.usage(stderr)
		return exitBadInput
	}
	fs := newFlagSet(name, cmd, stderr)
	if err := fs.Parse(rest); err != nil {
		if err == flag.ErrHelp {
			showUsage(stdout, name, cmd, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "herdlab %s: %v\nRun 'herdlab help %s' for usage.\n", name, err, name)
		return exitBadInput
	}
	return cmd.run(c, fs)
}

func newFlagSet(name string, cmd *command, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.SortFlags = false
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	// pflag would print the usage on --help and on a bad flag; run prints
	// it once, on stdout, for --help, and says what to do for a bad flag.
	fs.Usage = func() {}
	return fs
}

// showUsage prints a command's usage and flags on w.
func showUsage(w io.Writer, name string, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: herdlab %s %s\n\n%s\n", name, cmd.usage, cmd.summary)
	if fs.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.TrimRight(fs.FlagUsages(), "\n"))
	}
}

func (c *cli) help(args []string) int {
	if len(args) == 0 {
		c.usage(c.stdout)
		return exitOK
	}
	if args[0] == "scenario" {
		return c.helpScenario(args[1:])
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(c.stderr, "herdlab help: unknown command %q\n\n", args[0])
		c.usage(c.stderr)
		return exitBadInput
	}
	showUsage(c.stdout, args[0], cmd, newFlagSet(args[0], cmd, c.stdout))
	return exitOK
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, `herdlab: a lab for thundering herds.

Usage: herdlab COMMAND [ARGS]

Commands:
`)
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		first, _, _ := strings.Cut(commands[name].summary, "\n")
		fmt.Fprintf(w, "  %-10s %s\n", name, first)
	}
	fmt.Fprint(w, `
Run 'herdlab help COMMAND' (or 'herdlab COMMAND --help') for a command's flags,
'herdlab help scenario [FIELD]' for the fields of a scenario file.
Exit codes: 0 ok, 1 a check or run failed, 2 bad input.
`)
}

var versionCmd = &command{
	summary: "Print herdlab's version, commit, Go toolchain and platform.",
	run: func(c *cli, fs *flag.FlagSet) int {
		if fs.NArg() > 0 {
			fmt.Fprintf(c.stderr, "herdlab version: takes no arguments, got %q\n", fs.Arg(0))
			return exitBadInput
		}
		fmt.Fprintf(c.stdout, "herdlab %s\n", buildVersion())
		return exitOK
	},
}

// buildVersion is the line herdlab version prints after "herdlab ": the
// version, the commit when one is known, and the toolchain and platform,
// such as "v0.3.0-12-gabcdef1 (commit abcdef1..., go1.26.8, linux/amd64)".
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return versionLine(version, commit, info, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
}

// versionLine says which herdlab this is from what it knows of its build:
//   - the version: stamped, when make stamped one (-X main.version, what
//     git describe says); else the module's version that go install
//     module@version records (info.Main.Version, such as v0.3.0); else
//     "(devel)", a build from a checkout that stamped nothing.
//   - the commit: stamped (-X main.commit), else the vcs.revision the go
//     command records when it builds in a checkout with -buildvcs on
//     (with "-dirty" if vcs.modified says the tree had changes); else
//     none is said.
//
// info may be nil (a binary without build information).
func versionLine(stamped, stampedCommit string, info *debug.BuildInfo, goVersion, platform string) string {
	v, c := stamped, stampedCommit
	if info != nil {
		if v == "" && info.Main.Version != "" {
			v = info.Main.Version
		}
		if c == "" {
			var revision, modified string
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					revision = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if c = revision; c != "" && modified == "true" {
				c += "-dirty"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	about := []string{goVersion, platform}
	if c != "" {
		about = append([]string{"commit " + c}, about...)
	}
	return v + " (" + strings.Join(about, ", ") + ")"
}
