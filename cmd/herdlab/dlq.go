package main

import (
	"fmt"
	"os"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/realhttp"
)

var dlqCmd = &command{
	summary: `Send the dead letters of a replay again: herdlab dlq replay FILE --target URL.

Reads dead letters (JSON lines, as herdlab replay writes to dlq.jsonl) and
sends each once more to the target at --rate per second, with its original
Idempotency-Key, so that nothing is lost and nothing is processed twice
(article section 10). Letters that still fail are written to --failed.
Exits 1 when some were not delivered.`,
	usage: "replay FILE.jsonl --target URL [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.String("target", "", "URL to send the dead letters to (required)")
		fs.Float64("rate", 100, "dead letters per second")
		fs.String("failed", "", "write the letters that still fail here (default FILE.failed.jsonl)")
	},
	run: dlqReplay,
}

func dlqReplay(c *cli, fs *flag.FlagSet) int {
	if fs.NArg() != 2 || fs.Arg(0) != "replay" {
		fmt.Fprintln(c.stderr, "herdlab dlq: usage: herdlab dlq replay FILE.jsonl --target URL [--rate R]")
		return exitBadInput
	}
	file := fs.Arg(1)
	target, _ := fs.GetString("target")
	rate, _ := fs.GetFloat64("rate")
	failedFile, _ := fs.GetString("failed")
	if target == "" {
		fmt.Fprintln(c.stderr, "herdlab dlq replay: --target URL is required")
		return exitBadInput
	}
	if rate <= 0 {
		fmt.Fprintf(c.stderr, "herdlab dlq replay: --rate %v: want a number > 0\n", rate)
		return exitBadInput
	}
	in, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab dlq replay: %v\n", err)
		return exitBadInput
	}
	defer in.Close()
	if failedFile == "" {
		failedFile = file + ".failed.jsonl"
	}
	failed, err := os.Create(failedFile)
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab dlq replay: %v\n", err)
		return exitFailed
	}
	defer failed.Close()
	stats, err := realhttp.ReplayDLQ(c.ctx, in, target, rate, realhttp.DriverOptions{DLQ: failed})
	fmt.Fprintf(c.stdout, "%d dead letters read, %d sent, %d delivered, %d failed, %d not sent, in %s\n",
		stats.Read, stats.Sent, stats.Delivered, stats.Failed, stats.Unsent, stats.Wall.Round(1e6))
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab dlq replay: %v\n", err)
		if stats.Sent == 0 {
			return exitBadInput
		}
		return exitFailed
	}
	if stats.Delivered < stats.Read {
		fmt.Fprintf(c.stderr, "herdlab dlq replay: %d not delivered: see %s\n", stats.Read-stats.Delivered, failedFile)
		return exitFailed
	}
	os.Remove(failedFile) // nothing failed
	return exitOK
}
