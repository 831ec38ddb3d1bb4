package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/realhttp"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

var dlqCmd = &command{
	summary: `Send the dead letters of a replay again: herdlab dlq replay FILE --target URL.

Reads dead letters (JSON lines, as herdlab replay writes to dlq.jsonl) and
sends each once more to the target at --rate per second, with its original
Idempotency-Key, so that nothing is lost and nothing is processed twice
(article section 10). Letters that still fail are written to --failed
(default: FILE's name with .failed.jsonl, e.g. dlq.failed.jsonl; for
dlq.failed.jsonl itself, the same file), each with why it failed this
time (outcome, HTTP status or error), replacing that file whole once the
replay is done; run it again on that file for what is left. When every
letter is delivered, the --failed file is removed (emptied, when it is
FILE itself). Exits 1 when some were not delivered, 2 for bad input (the
message names the file).`,
	usage: "replay FILE.jsonl --target URL [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.String("target", "", "URL to send the dead letters to (required)")
		fs.Float64("rate", 100, "dead letters per second")
		fs.String("failed", "", "write the letters that still fail here (default: FILE.failed.jsonl, without FILE's .jsonl)")
	},
	run: dlqReplay,
}

// failedName is the default --failed of the dead-letter file file:
// dlq.jsonl gives dlq.failed.jsonl, and dlq.failed.jsonl itself.
func failedName(file string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(file, ".jsonl"), ".failed")
	return base + ".failed.jsonl"
}

func dlqReplay(c *cli, fs *flag.FlagSet) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(c.stderr, "herdlab dlq replay: "+format+"\n", args...)
		return code
	}
	if fs.NArg() != 2 || fs.Arg(0) != "replay" {
		fmt.Fprintln(c.stderr, "herdlab dlq: usage: herdlab dlq replay FILE.jsonl --target URL [--rate R]")
		return exitBadInput
	}
	file := fs.Arg(1)
	target, _ := fs.GetString("target")
	rate, _ := fs.GetFloat64("rate")
	failedFile, _ := fs.GetString("failed")
	switch {
	case target == "":
		return fail(exitBadInput, "--target URL is required")
	case !(rate > 0):
		return fail(exitBadInput, "--rate %v: want a number > 0", rate)
	case !(rate >= scenarios.MinRate && rate <= scenarios.MaxRate):
		// Infinite, or a gap between sends that a duration cannot hold
		// or that is under a nanosecond.
		return fail(exitBadInput, "--rate %v: want a rate between %g and %g per second, as a scenario's", rate, scenarios.MinRate, scenarios.MaxRate)
	}
	if err := realhttp.CheckTarget(target); err != nil {
		return fail(exitBadInput, "--target: %v", err)
	}
	if failedFile == "" {
		failedFile = failedName(file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fail(exitBadInput, "%v", err)
	}
	letters, err := realhttp.DriverReadDeadLetters(bytes.NewReader(data))
	if err != nil {
		return fail(exitBadInput, "%s: %v", file, err)
	}
	if err := checkWritable(filepath.Dir(failedFile)); err != nil {
		return fail(exitBadInput, "--failed %s: cannot write there: %v", failedFile, err)
	}

	var left bytes.Buffer // what still fails, written whole at the end
	stats, err := realhttp.ReplayDeadLetters(c.ctx, letters, target, rate, realhttp.DriverOptions{DLQ: &left})
	fmt.Fprintf(c.stdout, "%s: %d dead letters read, %d sent, %d delivered, %d failed, %d not sent, in %s\n",
		file, stats.Read, stats.Sent, stats.Delivered, stats.Failed, stats.Unsent, stats.Wall.Round(1e6))
	code := exitOK
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab dlq replay: %s: %v\n", file, err)
		code = exitFailed
	}
	if stats.Delivered == stats.Read {
		// Nothing is left: no file of an earlier replay may say otherwise.
		if same(failedFile, file) {
			err = results.WriteFile(failedFile, func(io.Writer) error { return nil })
		} else if err = os.Remove(failedFile); os.IsNotExist(err) {
			err = nil
		}
		if err != nil {
			return fail(exitFailed, "%v", err)
		}
		return code
	}
	if err := results.WriteFile(failedFile, func(w io.Writer) error { _, err := w.Write(left.Bytes()); return err }); err != nil {
		return fail(exitFailed, "the %d letters not delivered are not saved: %v", stats.Read-stats.Delivered, err)
	}
	fmt.Fprintf(c.stderr, "herdlab dlq replay: %d not delivered: see %s\n", stats.Read-stats.Delivered, failedFile)
	return exitFailed
}

// same reports whether a and b name the same file.
func same(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}
