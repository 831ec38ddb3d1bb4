package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes s as summary.json: indented, fields in a fixed order,
// maps sorted by key, so equal summaries give equal bytes.
func WriteJSON(w io.Writer, s *Summary) error { return writeJSON(w, s) }

// writeJSON writes v as indented JSON, struct fields in their order and
// maps sorted by key.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ReadJSON reads a summary written by WriteJSON.
func ReadJSON(r io.Reader) (*Summary, error) {
	var s Summary
	if err := readJSON(r, &s); err != nil {
		return nil, fmt.Errorf("results: reading summary: %w", err)
	}
	return &s, nil
}

// readJSON decodes JSON from r into v, refusing unknown fields.
func readJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// TimeseriesHeader is the header of timeseries.csv. Its first ten
// columns are a contract (DESIGN.md); later ones may be added, at the end.
const TimeseriesHeader = "strategy,run,t,attempts,delivered,failed,rejected,short_circuited,queue,in_flight,ok,not_ok,throttled,timed_out,not_ok_timeout,delayed,dlq,queue_max,queue_mean"

// WriteTimeseries writes timeseries.csv: one row per run and bucket, t the
// bucket's start in seconds, runs in the order given. queue_max and
// queue_mean (Bucket.QueueMax, and QueueMean to 3 decimals) are empty
// for a run whose queue was not measured (Run.QueueTracked).
func WriteTimeseries(w io.Writer, bucket time.Duration, runs []*Run) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(TimeseriesHeader + "\n")
	buf := make([]byte, 0, 128)
	for _, r := range runs {
		for i, b := range r.Series {
			buf = append(buf[:0], r.Strategy...)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, int64(r.Run), 10)
			buf = append(buf, ',')
			buf = strconv.AppendFloat(buf, (time.Duration(i) * bucket).Seconds(), 'f', -1, 64)
			for _, x := range [...]int64{b.Attempts, b.Delivered, b.Failed, b.Rejected, b.ShortCircuited, b.Queue, b.InFlight, b.OK, b.NotOK, b.Throttled, b.TimedOut, b.NotOKTimeout, b.Delayed, b.DLQ} {
				buf = append(buf, ',')
				buf = strconv.AppendInt(buf, x, 10)
			}
			buf = append(buf, ',')
			if r.QueueTracked {
				buf = strconv.AppendInt(buf, b.QueueMax, 10)
				buf = append(buf, ',')
				buf = strconv.AppendFloat(buf, math.Round(b.QueueMean*1000)/1000, 'f', -1, 64)
			} else {
				buf = append(buf, ',')
			}
			buf = append(buf, '\n')
			bw.Write(buf)
		}
	}
	return bw.Flush()
}

// summaryColumns are the columns of summary.csv, with how to read each
// from a strategy's summary.
var summaryColumns = []struct {
	name string
	get  func(f *Figures) *float64
}{
	{"requests", func(f *Figures) *float64 { return &f.Requests }},
	{"attempts", func(f *Figures) *float64 { return &f.Attempts }},
	{"delivered", func(f *Figures) *float64 { return &f.Delivered }},
	{"delivered_ratio", func(f *Figures) *float64 { return &f.DeliveredRatio }},
	{"dead_lettered", func(f *Figures) *float64 { return &f.DeadLettered }},
	{"unfinished", func(f *Figures) *float64 { return &f.Unfinished }},
	{"duplicates", func(f *Figures) *float64 { return &f.Duplicates }},
	{"amplification", func(f *Figures) *float64 { return &f.Amplification }},
	{"peak_load", func(f *Figures) *float64 { return &f.PeakLoad }},
	{"peak_load_ratio", func(f *Figures) *float64 { return f.PeakLoadRatio }},
	{"peak_at_s", func(f *Figures) *float64 { return &f.PeakAtS }},
	{"peak_load_overall", func(f *Figures) *float64 { return &f.PeakLoadOverall }},
	{"recovery_time_s", func(f *Figures) *float64 { return f.RecoveryTimeS }},
	{"drain_time_s", func(f *Figures) *float64 { return f.DrainTimeS }},
	{"completion_time_s", func(f *Figures) *float64 { return f.CompletionTimeS }},
	{"latency_mean_s", func(f *Figures) *float64 { return &f.LatencyS.Mean }},
	{"latency_p50_s", func(f *Figures) *float64 { return &f.LatencyS.P50 }},
	{"latency_p90_s", func(f *Figures) *float64 { return &f.LatencyS.P90 }},
	{"latency_p99_s", func(f *Figures) *float64 { return &f.LatencyS.P99 }},
	{"latency_max_s", func(f *Figures) *float64 { return &f.LatencyS.Max }},
	{"processed", func(f *Figures) *float64 { return &f.Processed }},
	{"wasted_work", func(f *Figures) *float64 { return &f.Wasted }},
	{"short_circuited", func(f *Figures) *float64 { return &f.ShortCircuited }},
	{"rejected", func(f *Figures) *float64 { return &f.Rejected }},
	{"throttled", func(f *Figures) *float64 { return &f.Throttled }},
	{"timed_out", func(f *Figures) *float64 { return &f.TimedOut }},
	{"responses_lost", func(f *Figures) *float64 { return &f.Lost }},
	{"replayed", func(f *Figures) *float64 { return &f.Replayed }},
	{"backlog_at_outage_end", func(f *Figures) *float64 { return f.BacklogAtOutageEnd }},
	{"dead_lettered_in_outage", func(f *Figures) *float64 { return &f.DeadLetteredInOutage }},
	{"client_rejected", func(f *Figures) *float64 { return &f.ClientRejected }},
	{"rate_limited", func(f *Figures) *float64 { return &f.RateLimited }},
	{"shared_budget_denied", func(f *Figures) *float64 { return &f.SharedBudgetDenied }},
	{"hedges", func(f *Figures) *float64 { return &f.Hedges }},
	{"hedge_wins", func(f *Figures) *float64 { return &f.HedgeWins }},
}

// WriteSummaryCSV writes summary.csv: one row per strategy, a figure per
// column, empty where a figure does not exist.
func WriteSummaryCSV(w io.Writer, s *Summary) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("strategy")
	for _, c := range summaryColumns {
		bw.WriteString("," + c.name)
	}
	bw.WriteString("\n")
	for i := range s.Strategies {
		st := &s.Strategies[i]
		bw.WriteString(st.Name)
		for _, c := range summaryColumns {
			bw.WriteString(",")
			if x := c.get(&st.Figures); x != nil {
				bw.WriteString(strconv.FormatFloat(*x, 'g', -1, 64))
			}
		}
		bw.WriteString("\n")
	}
	return bw.Flush()
}

// tableRows returns the rows of the human summary table: a header, then a
// row per strategy. Without an outage, the peak column is the peak of the
// whole run. In a graph of two or more services, the columns of the
// server's figures name the front (the service the fleet calls), and
// three columns beside them give the service each strategy hurts most
// (StrategySummary.Worst): its name, peak load and amplification.
func tableRows(s *Summary) [][]string {
	peakHead := "peak after outage"
	if len(s.Outages) == 0 {
		peakHead = "peak load"
	}
	front := ""
	if len(s.Strategies) > 0 && s.Strategies[0].Worst != nil {
		front = s.Strategies[0].Front()
	}
	of := func(head string) string {
		if front == "" {
			return head
		}
		return head + " (" + front + ")"
	}
	head := []string{"strategy", of("attempts"), of("amplif."), of(peakHead)}
	if front != "" {
		head = append(head, "hurt most", "its "+peakHead, "its amplif.")
	}
	head = append(head, of("recovery"), "drain", "completion", "delivered", "dead letters", "unfinished", of("duplicates"), "p99 latency (delivered only)")
	rows := [][]string{head}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		row := []string{
			st.Name,
			Count(st.Attempts),
			Decimal(st.Amplification) + "x",
			PeakText(st),
		}
		if front != "" {
			row = append(row, worstCells(st.Worst)...)
		}
		rows = append(rows, append(row,
			RecoveryText(s, st),
			drainText(st),
			Seconds(st.CompletionTimeS, "unfinished"),
			fmt.Sprintf("%s (%s%%)", Count(st.Delivered), Percent(st.DeliveredRatio)),
			Count(st.DeadLettered),
			Count(st.Unfinished),
			Count(st.Duplicates),
			latencyText(st),
		))
	}
	return rows
}

// worstCells are the table's cells of the service a strategy hurts most:
// its name, its peak load ("5,321.3 (1.06x) at 60s") and amplification.
func worstCells(w *WorstService) []string {
	if w == nil {
		return []string{"", "", ""}
	}
	return []string{w.Name, peakText(w.PeakLoad, w.PeakLoadRatio, w.PeakAtS), Decimal(w.Amplification) + "x"}
}

// PeakText says a strategy's peak load: "2,065 (1.03x) at 36s", or
// "none" when no attempt came after the outage.
func PeakText(st *StrategySummary) string {
	return peakText(st.PeakLoad, st.PeakLoadRatio, st.PeakAtS)
}

func peakText(load float64, ratio *float64, at float64) string {
	if load == 0 {
		return "none"
	}
	peak := Count(load)
	if ratio != nil {
		peak += fmt.Sprintf(" (%sx)", Decimal(*ratio))
	}
	return peak + " at " + Seconds(&at, "")
}

// latencyText says a strategy's p99 latency, or "none delivered": the
// latency of no request is not 0 s.
func latencyText(st *StrategySummary) string {
	if st.Delivered == 0 {
		return "none delivered"
	}
	return Seconds(&st.LatencyS.P99, "")
}

// drainText says a strategy's drain time, or "nothing left" when it had
// given up on every request before the outage ended (a 0 s that is no
// speed either).
func drainText(st *StrategySummary) string {
	if st.Recovery == NothingLeft {
		return "nothing left"
	}
	return Seconds(st.DrainTimeS, "unfinished")
}

// RecoveryText says a strategy's recovery: a time, "never", or "nothing
// left" when it had given up or delivered everything by the end of the
// outage (a 0 s that is no speed); with runs that differ, how many
// recovered and how many left nothing.
func RecoveryText(s *Summary, st *StrategySummary) string {
	switch st.Recovery {
	case NothingLeft:
		return "nothing left"
	case NoOutage:
		return "no outage"
	case Mixed:
		text := Seconds(st.RecoveryTimeS, "never") + fmt.Sprintf(" (%d of %d runs", st.RecoveredRuns, s.Runs)
		if st.NothingLeftRuns > 0 {
			text += fmt.Sprintf("; %d left nothing", st.NothingLeftRuns)
		}
		return text + ")"
	}
	return Seconds(st.RecoveryTimeS, "never")
}

// serviceRows returns the rows of the table of a graph's services: a
// header, then a row per strategy and service; nil without services.
func serviceRows(s *Summary) [][]string {
	var rows [][]string
	for i := range s.Strategies {
		st := &s.Strategies[i]
		for k := range st.Services {
			sv := &st.Services[k]
			if rows == nil {
				rows = [][]string{{"strategy", "service", "attempts", "amplif.", "peak load", "recovery", "delivered", "rejected", "wasted", "late", "deadline dropped"}}
			}
			peak := "none"
			if sv.PeakLoad > 0 {
				peak = Count(sv.PeakLoad)
				if sv.PeakLoadRatio != nil {
					peak += fmt.Sprintf(" (%sx)", Decimal(*sv.PeakLoadRatio))
				}
			}
			recovery := Seconds(sv.RecoveryTimeS, "never")
			if sv.AttemptsAfterOutage == 0 {
				recovery = "no load" // a 0 s that is no speed
			}
			rows = append(rows, []string{st.Name, sv.Name, Count(sv.Attempts), Decimal(sv.Amplification) + "x", peak,
				recovery, Count(sv.Delivered), Count(sv.Rejected), Count(sv.Wasted), Count(sv.LateWork), Count(sv.DeadlineDropped)})
		}
	}
	return rows
}

// WriteTable writes the summary as an aligned text table, for a terminal,
// and a graph's services as a second table.
func WriteTable(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range tableRows(s) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if rows := serviceRows(s); rows != nil {
		fmt.Fprintln(tw)
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	return tw.Flush()
}

// WriteFile writes a file through write, atomically and durably: into a
// temporary file beside it, synced to disk, renamed over path only when
// complete, and the folder synced, so that neither a crash nor a power
// loss leaves a half-written or empty file at path.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+ownMark()+"*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	return nil
}

// File is one file of an output folder: its name, and what writes it.
type File struct {
	Name  string
	Write func(io.Writer) error
}

// Raw returns a write function that writes data, for WriteFile and File.
func Raw(data []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(data); return err }
}

// WriteFiles writes files into dir, made if need be, in order, each
// atomically (see WriteFile).
func WriteFiles(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := WriteFile(filepath.Join(dir, f.Name), f.Write); err != nil {
			return err
		}
	}
	return nil
}

// ImageFiles returns the files of images.
func ImageFiles(images []Image) []File {
	files := make([]File, len(images))
	for i, im := range images {
		files[i] = File{im.File, Raw(im.Data)}
	}
	return files
}

// Count formats a count with thousands separators: 50000 -> 50,000. A
// fractional count (a mean over runs) keeps one decimal.
func Count(x float64) string {
	whole := strconv.FormatFloat(x, 'f', 0, 64)
	if x != float64(int64(x)) {
		whole = strconv.FormatFloat(x, 'f', 1, 64)
	}
	intPart, frac, _ := strings.Cut(whole, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// Bytes formats a size in bytes: 512 B, 1.5 KB, 29 GB (in powers of
// 1024, as memory is counted).
func Bytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	x, i := float64(b), -1
	for x >= unit && i < 4 {
		x /= unit
		i++
	}
	s := fmt.Sprintf("%.1f", x)
	if x >= 10 {
		s = fmt.Sprintf("%.0f", x)
	}
	return s + " " + []string{"KB", "MB", "GB", "TB", "PB"}[i]
}

// Decimal formats x with up to two decimals, trailing zeros dropped.
func Decimal(x float64) string {
	return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
}

// Percent formats a share (a ratio in [0, 1]) as a percentage, without
// the sign: to two decimals, more where two would round a share that is
// not all to 100 or one that is not none to 0 (99,997 of 100,000 is
// "99.997", not "100"); beyond six decimals, "> 99.999999" or
// "< 0.000001".
func Percent(ratio float64) string {
	p := 100 * ratio
	text := Decimal(p)
	if (text != "100" || ratio == 1) && (text != "0" || ratio == 0) {
		return text
	}
	for d := 3; d <= 6; d++ {
		text = strings.TrimRight(strings.TrimRight(strconv.FormatFloat(p, 'f', d, 64), "0"), ".")
		if text != "100" && text != "0" {
			return text
		}
	}
	if ratio > 0.5 {
		return "> 99.999999"
	}
	return "< 0.000001"
}

// Seconds formats a duration in seconds, or none when it is nil.
func Seconds(s *float64, none string) string {
	if s == nil {
		return none
	}
	switch x := *s; {
	case x == 0:
		return "0s"
	case x < 1:
		return Decimal(x*1000) + "ms"
	default:
		return Decimal(x) + "s"
	}
}
