package realhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// driverWriteDeadLetter writes one dead letter as a JSON line, in one
// Write.
func driverWriteDeadLetter(w io.Writer, l DriverDeadLetter) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// DriverReadDeadLetters reads a dead-letter file written by Replay: one
// JSON object per line (see DriverDeadLetter), blank lines skipped. Every
// malformed line is reported, with its line number; unknown fields are
// errors, and so is a key that is not a UUID.
func DriverReadDeadLetters(r io.Reader) ([]DriverDeadLetter, error) {
	var (
		letters []DriverDeadLetter
		errs    []error
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l DriverDeadLetter
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", line, err))
			continue
		}
		if dec.More() {
			errs = append(errs, fmt.Errorf("line %d: more than one JSON value", line))
			continue
		}
		if _, err := uuid.Parse(l.Key); err != nil {
			errs = append(errs, fmt.Errorf("line %d: key %q: %w", line, l.Key, err))
			continue
		}
		if l.Request < 0 || l.Attempts < 0 {
			errs = append(errs, fmt.Errorf("line %d: request and attempts must be >= 0", line))
			continue
		}
		letters = append(letters, l)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("realhttp: reading dead letters: %w", errors.Join(errs...))
	}
	return letters, nil
}

// DLQReplayStats is what ReplayDLQ did with the dead letters it read.
// Read = Delivered + Failed + Unsent.
type DLQReplayStats struct {
	Read      int64 // dead letters read
	Sent      int64 // dead letters sent (one attempt each)
	Delivered int64 // answered with a 2xx
	Failed    int64 // answered otherwise, or no answer within the timeout
	Unsent    int64 // not sent, or abandoned in flight, because ctx ended
	// Outcomes counts the answered sends by outcome name.
	Outcomes map[string]int64
	Wall     time.Duration
}

// driverReplayInFlight bounds the sends of ReplayDLQ in flight at once,
// in units of the connection bound.
const driverReplayInFlight = 4

// ReplayDLQ sends the dead letters read from dlq (JSON lines written by
// Replay) to target (opts.Target when empty), in the file's order, at
// rate per second of scenario time (rate / TimeScale on the wall clock),
// each with its original Idempotency-Key, so that a server that keeps
// keys does not process one twice.
//
// Each dead letter gets one attempt, with headers Herdlab-Attempt (its
// attempts so far plus one), Herdlab-Request, Herdlab-Planned (since the
// start of the replay) and Herdlab-Replay: 1, and a timeout of
// opts.ReplayTimeout (30s by default, scaled). A 2xx delivers it; any
// other answer or none fails it: there is no retry, so that the replay
// cannot turn into a herd of its own; run it again for what is left.
// When opts.DLQ is set, every dead letter not delivered is written to it
// again, in the input's order: a failed one with one more attempt, the
// time of the failure in seconds since the start of the replay, the
// reason max_attempts (not_retryable for a 4xx), and why this send
// failed (its outcome, HTTP status, or the client's error); an unsent
// one as it was read. Nothing is lost.
//
// A malformed input sends nothing and returns every problem found. When
// ctx ends, sending stops, sends in flight are abandoned, and the stats
// so far are returned with an error wrapping ctx's error.
func ReplayDLQ(ctx context.Context, dlq io.Reader, target string, rate float64, opts DriverOptions) (DLQReplayStats, error) {
	if err := driverDLQArgs(target, rate, opts); err != nil {
		return DLQReplayStats{Outcomes: map[string]int64{}}, err
	}
	letters, err := DriverReadDeadLetters(dlq)
	if err != nil {
		return DLQReplayStats{Outcomes: map[string]int64{}}, err
	}
	return ReplayDeadLetters(ctx, letters, target, rate, opts)
}

// driverDLQArgs checks the arguments of a DLQ replay.
func driverDLQArgs(target string, rate float64, opts DriverOptions) error {
	if target == "" {
		target = opts.Target
	}
	if err := driverTarget(target); err != nil {
		return err
	}
	if _, err := driverScale(opts); err != nil {
		return err
	}
	if !(rate > 0) || math.IsInf(rate, 1) {
		return fmt.Errorf("realhttp: replay rate must be > 0 per second, got %v", rate)
	}
	_, err := driverConns(opts)
	return err
}

// ReplayDeadLetters is ReplayDLQ for dead letters already read.
func ReplayDeadLetters(ctx context.Context, letters []DriverDeadLetter, target string, rate float64, opts DriverOptions) (DLQReplayStats, error) {
	stats := DLQReplayStats{Outcomes: map[string]int64{}}
	if err := driverDLQArgs(target, rate, opts); err != nil {
		return stats, err
	}
	if target == "" {
		target = opts.Target
	}
	scale, _ := driverScale(opts)
	stats.Read = int64(len(letters))
	client, closeIdle, err := driverClient(opts)
	if err != nil {
		return stats, err
	}
	defer closeIdle()
	timeout := opts.ReplayTimeout
	if timeout <= 0 {
		timeout = scenarios.DefaultTimeout
	}
	timeout = max(driverToWall(timeout, scale), 1)
	conns := opts.MaxConns
	if conns == 0 {
		conns = DriverDefaultMaxConns
	}

	// The state of every dead letter, each written by its own goroutine.
	type sendState struct {
		driverAnswer
		at   time.Duration // scenario time of the answer
		done bool          // answered (or timed out)
	}
	states := make([]sendState, len(letters))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, conns*driverReplayInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	gap := time.Duration(float64(time.Second) / rate) // scenario time between sends
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	sent := 0
send:
	for k := range letters {
		planned := time.Duration(k) * gap
		if wait := driverToWall(planned, scale) - time.Since(start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-runCtx.Done():
				break send
			}
		}
		select {
		case sem <- struct{}{}:
		case <-runCtx.Done():
			break send
		}
		key, _ := uuid.Parse(letters[k].Key)
		call := driverCall{
			request: letters[k].Request,
			key:     key,
			attempt: letters[k].Attempts + 1,
			planned: planned,
			timeout: timeout,
			replay:  true,
		}
		sent++
		wg.Go(func() {
			defer func() { <-sem }()
			a, _, live := driverSend(runCtx, client, target, call)
			if live {
				at := time.Since(start)
				if scale != 1 {
					at = time.Duration(float64(at) / scale)
				}
				states[k] = sendState{driverAnswer: a, at: at, done: true}
			}
		})
	}
	wg.Wait()
	stats.Wall = time.Since(start)
	stats.Sent = int64(sent)

	var werr error
	for k, s := range states {
		var out *DriverDeadLetter
		switch {
		case !s.done:
			stats.Unsent++
			out = &letters[k]
		case s.res.Outcome == strategies.Success:
			stats.Delivered++
			stats.Outcomes[s.res.Outcome.String()]++
		default:
			stats.Failed++
			stats.Outcomes[s.res.Outcome.String()]++
			l := letters[k]
			l.Attempts++
			l.T = s.at.Seconds()
			l.Reason = strategies.MaxAttempts.String()
			if !strategies.DefaultRetryOn.Has(s.res.Outcome) {
				l.Reason = strategies.NotRetryable.String()
			}
			l.Outcome, l.Status, l.Error = s.res.Outcome.String(), s.status, ""
			if s.err != nil {
				l.Error = s.err.Error()
			}
			out = &l
		}
		if out != nil && opts.DLQ != nil && werr == nil {
			werr = driverWriteDeadLetter(opts.DLQ, *out)
		}
	}
	err = nil
	if cerr := ctx.Err(); cerr != nil && stats.Unsent > 0 {
		err = fmt.Errorf("realhttp: DLQ replay interrupted after %d of %d sends: %w", sent, len(letters), cerr)
	}
	if werr != nil {
		err = errors.Join(err, fmt.Errorf("realhttp: writing dead letters: %w", werr))
	}
	return stats, err
}
