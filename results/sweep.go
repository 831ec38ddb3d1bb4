package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// RunRecord is one run of one strategy at one point of a sweep: its
// figures and its latency histogram, which is all a sweep's outputs need.
// Shards exchange them, and merging records gives exactly the figures of
// the runs they came from.
type RunRecord struct {
	Point    int     `json:"point"`
	Strategy string  `json:"strategy"`
	Run      int     `json:"run"`
	Figures  Figures `json:"figures"`
	Events   int64   `json:"events"`
	// LatencyBuckets is the run's latency histogram (LatencyHistogram's
	// geometry): its populated buckets, as pairs of the bucket's value
	// (the lowest it holds, in µs) and its count, in increasing value.
	// They give back every count, as the HDR encoding does, at a
	// fraction of the cost.
	LatencyBuckets [][2]int64 `json:"latency_buckets"`
	// LatencyCounts (pairs of an index into the histogram's counts and
	// the count) and Latency (HDR-encoded, V2 compressed) are how older
	// records hold the histogram; read, never written.
	LatencyCounts [][2]int64 `json:"latency_counts,omitempty"`
	Latency       []byte     `json:"latency_hdr,omitempty"`
}

// NewRunRecord records run r, at point, with its figures under setup.
func NewRunRecord(point int, r *Run, setup Setup) (RunRecord, error) {
	rec := RunRecord{
		Point:          point,
		Strategy:       r.Strategy,
		Run:            r.Run,
		Figures:        r.Figures(setup),
		Events:         r.Events,
		LatencyBuckets: [][2]int64{},
	}
	r.Latency.Buckets(func(v, c int64) bool {
		rec.LatencyBuckets = append(rec.LatencyBuckets, [2]int64{v, c})
		return true
	})
	return rec, nil
}

// Latencies gives back the record's latency histogram.
func (r *RunRecord) Latencies() (*Latencies, error) {
	l := NewLatencies()
	if _, err := r.addTo(l); err != nil {
		return nil, err
	}
	return l, nil
}

// addTo adds the record's latencies to l and returns how many there are.
func (r *RunRecord) addTo(l *Latencies) (int64, error) {
	if len(r.LatencyBuckets) == 0 && (len(r.LatencyCounts) > 0 || len(r.Latency) > 0) {
		h, err := r.older()
		if err != nil {
			return 0, err
		}
		// The dense histogram's buckets by value, through a sparse copy.
		p := hdrhistogram.NewPacked(latencyLowest, latencyHighest, latencyDigits)
		p.MergeFrom(h)
		p.ForEachBucket(func(v, c int64) bool { return l.Add(v, c) == nil })
		return h.TotalCount(), nil
	}
	var total int64
	last := int64(-1)
	for _, vc := range r.LatencyBuckets {
		v, c := vc[0], vc[1]
		if v <= last || c <= 0 {
			return 0, r.damaged(fmt.Errorf("count %d at %d µs: out of order, or not positive", c, v))
		}
		if err := l.Add(v, c); err != nil {
			return 0, r.damaged(err)
		}
		last = v
		total += c
	}
	return total, nil
}

// older gives back the histogram of a record written before
// LatencyBuckets.
func (r *RunRecord) older() (*hdrhistogram.Histogram, error) {
	if len(r.LatencyCounts) == 0 {
		h, err := hdrhistogram.Decode(r.Latency)
		if err != nil {
			return nil, r.damaged(err)
		}
		if !sameGeometry(h.Export()) {
			return nil, r.damaged(errors.New("not of LatencyHistogram's range and precision"))
		}
		return h, nil
	}
	s := *latencyGeometry()
	s.Counts = make([]int64, len(s.Counts))
	last := int64(-1) // the counts are in the order of their indexes
	for _, ic := range r.LatencyCounts {
		i, c := ic[0], ic[1]
		if i <= last || i >= int64(len(s.Counts)) || c <= 0 {
			return nil, r.damaged(fmt.Errorf("count %d at index %d: out of range or order, or not positive", c, i))
		}
		last = i
		s.Counts[i] = c
	}
	return hdrhistogram.Import(&s), nil
}

// sameGeometry reports whether a histogram's snapshot has the range and
// precision of LatencyHistogram.
func sameGeometry(s *hdrhistogram.Snapshot) bool {
	g := latencyGeometry()
	return s.LowestTrackableValue == g.LowestTrackableValue && s.HighestTrackableValue == g.HighestTrackableValue &&
		s.SignificantFigures == g.SignificantFigures && len(s.Counts) == len(g.Counts)
}

// latencyGeometry is an empty LatencyHistogram's snapshot, made once.
var latencyGeometry = sync.OnceValue(func() *hdrhistogram.Snapshot { return LatencyHistogram().Export() })

func (r *RunRecord) damaged(err error) error {
	return fmt.Errorf("results: decoding the latency histogram of point %d, %s, run %d: %w", r.Point, r.Strategy, r.Run, err)
}

// WriteRecord writes a record as JSON.
func WriteRecord(w io.Writer, r *RunRecord) error {
	return json.NewEncoder(w).Encode(r)
}

// ReadRecord reads a record written by WriteRecord.
func ReadRecord(r io.Reader) (*RunRecord, error) {
	var rec RunRecord
	if err := readJSON(r, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// DecodeRecord decodes a record that WriteRecord wrote, data, as
// ReadRecord reads it, with the same result and the same errors, in
// about half the time: a record's latency buckets, most of its numbers,
// are read by hand, and the rest by encoding/json. Any record not laid
// out as WriteRecord lays them out is decoded by ReadRecord.
func DecodeRecord(data []byte) (*RunRecord, error) {
	const key = `,"latency_buckets":`
	i := bytes.LastIndex(data, []byte(key))
	if i < 0 {
		return ReadRecord(bytes.NewReader(data))
	}
	buckets, ok := parseBuckets(data[i+len(key):])
	if !ok {
		return ReadRecord(bytes.NewReader(data))
	}
	head := make([]byte, 0, i+1)
	head = append(append(head, data[:i]...), '}')
	rec, err := ReadRecord(bytes.NewReader(head))
	if err != nil {
		return ReadRecord(bytes.NewReader(data)) // its own error
	}
	rec.LatencyBuckets = buckets
	return rec, nil
}

// parseBuckets parses the end of a record as WriteRecord writes it: an
// array of pairs of integers, then "}" and at most a newline. ok is false
// for anything else, which encoding/json may still read.
func parseBuckets(b []byte) (buckets [][2]int64, ok bool) {
	if len(b) < 3 || b[0] != '[' {
		return nil, false
	}
	buckets = make([][2]int64, 0, bytes.Count(b, []byte("],["))+1)
	b = b[1:]
	if b[0] == ']' {
		b = b[1:]
	} else {
		for {
			var pair [2]int64
			if b, ok = parsePair(b, &pair); !ok {
				return nil, false
			}
			buckets = append(buckets, pair)
			if len(b) == 0 {
				return nil, false
			}
			c := b[0]
			b = b[1:]
			if c == ']' {
				break
			}
			if c != ',' {
				return nil, false
			}
		}
	}
	if string(b) != "}" && string(b) != "}\n" {
		return nil, false
	}
	return buckets, true
}

// parsePair parses "[X,Y]" at the start of b into p, and returns the rest.
func parsePair(b []byte, p *[2]int64) (rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '[' {
		return nil, false
	}
	b = b[1:]
	for k := range 2 {
		j := 0
		if j < len(b) && b[j] == '-' {
			j++
		}
		start := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == start || b[start] == '0' && j > start+1 {
			return nil, false // no digits, or a leading zero: not JSON's
		}
		x, err := strconv.ParseInt(string(b[:j]), 10, 64)
		if err != nil {
			return nil, false
		}
		p[k] = x
		if j == len(b) || b[j] != ",]"[k] {
			return nil, false
		}
		b = b[j+1:]
	}
	return b, true
}

// Sweep is sweep.json: a scenario run at every point of a grid of
// values of some of its fields, with each strategy's figures at each
// point.
type Sweep struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Runs     int    `json:"runs"`
	// Metric is the figure the charts show, such as recovery_time_s.
	Metric     string   `json:"metric"`
	Axes       []Axis   `json:"vary"`
	Strategies []string `json:"strategies"`
	// StrategyIndexes are the strategies' places in the scenario file,
	// which give them their colours; empty in a sweep.json written
	// before they were kept.
	StrategyIndexes []int        `json:"strategy_indexes,omitempty"`
	Points          []SweepPoint `json:"points"`
}

// Axis is one varied field and its values, in the order swept.
type Axis struct {
	Path   string   `json:"path"`
	Label  string   `json:"label,omitempty"`
	Values []string `json:"values"`
	// Log is set when the values are a geometric range.
	Log bool `json:"log,omitempty"`
}

// Name is how reports name the axis: its label, or else its path.
func (a Axis) Name() string {
	if a.Label != "" {
		return a.Label
	}
	return a.Path
}

// SweepPoint is one point of the grid: a value per axis, and every
// strategy's figures there. Points are in grid order, the first axis
// changing slowest.
type SweepPoint struct {
	Index      int            `json:"point"`
	Values     []string       `json:"values"`
	Strategies []PointSummary `json:"strategies"`
}

// PointSummary is one strategy's figures at a point: those of its run, or
// with several runs their means, with the 95% confidence half-widths in
// CI95, as in summary.json.
type PointSummary struct {
	Name string `json:"name"`
	Figures
	RecoveredRuns   int      `json:"recovered_runs"`
	NothingLeftRuns int      `json:"nothing_left_runs"`
	Recovery        string   `json:"recovery"`
	CI95            *Figures `json:"ci95,omitempty"`
	// LatencyPooledS is the latency of every request delivered in any of
	// the point's runs: quantiles of the runs' histograms merged.
	LatencyPooledS Latency `json:"latency_pooled_s"`
	Events         int64   `json:"events"`
}

// Recovered reports whether the server recovered in every run of the
// strategy at point p, from a backlog: a run that left nothing to
// recover (it gave up on every request during the outage) does not
// count.
func (s *Sweep) Recovered(p *PointSummary) bool {
	return p.RecoveredRuns == s.Runs
}

// Value returns the point's value of a figure named as in summary.json
// (recovery_time_s, latency_s.p99, recovered_runs...), and false when the
// figure does not exist there (a server that never recovered).
func (p *PointSummary) Value(figure string) (float64, bool) {
	return NamedFigures(p).Get(figure)
}

// Named holds figures by their names in summary.json, so that what reads
// a figure by name and the file can never disagree.
type Named map[string]any

// NamedFigures returns the figures of v by name: v is a *Figures, a
// *StrategySummary or a *PointSummary. nil gives no figures, and so do
// figures that summary.json could not hold (an infinite or NaN value).
func NamedFigures(v any) Named {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m Named
	if err := json.Unmarshal(data, &m); err != nil {
		return nil
	}
	// A graph's services, a list in summary.json, by name: a figure
	// services.NAME.FIGURE.
	if list, ok := m["services"].([]any); ok {
		byName := map[string]any{}
		for _, s := range list {
			if s, ok := s.(map[string]any); ok {
				if name, ok := s["name"].(string); ok {
					byName[name] = s
				}
			}
		}
		m["services"] = byName
	}
	return m
}

// Get returns the figure named name, such as peak_load_ratio or
// latency_s.p99; false when it does not exist (a nil figure, an unknown
// name, or a latency where nothing was delivered: its 0 is no speed).
// dead_lettered_by.REASON is 0 for a reason without dead letters.
func (m Named) Get(name string) (float64, bool) {
	if d, ok := m["delivered"].(float64); ok && d == 0 && strings.HasPrefix(name, "latency_s.") {
		return 0, false
	}
	var cur any = map[string]any(m)
	parts := strings.Split(name, ".")
	if len(parts) > 3 && parts[0] == "services" {
		// A service's name may hold dots: the figure is the last part.
		parts = []string{"services", strings.Join(parts[1:len(parts)-1], "."), parts[len(parts)-1]}
	}
	for _, part := range parts {
		mm, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		if cur, ok = mm[part]; !ok {
			return 0, strings.HasPrefix(name, "dead_lettered_by.") && strings.Count(name, ".") == 1 || slices.Contains(ZeroWhenMissing, name)
		}
	}
	x, ok := cur.(float64)
	return x, ok
}

// WriteSweepJSON writes s as sweep.json: indented, fields in a fixed
// order, so equal sweeps give equal bytes.
func WriteSweepJSON(w io.Writer, s *Sweep) error { return writeJSON(w, s) }

// ReadSweepJSON reads a sweep written by WriteSweepJSON.
func ReadSweepJSON(r io.Reader) (*Sweep, error) {
	var s Sweep
	if err := readJSON(r, &s); err != nil {
		return nil, fmt.Errorf("results: reading sweep: %w", err)
	}
	return &s, nil
}

// WriteSweepCSV writes sweep.csv: one row per point, strategy and run, in
// that order, with the point's value of each axis (a column named by its
// path), whether the server recovered, and the figures of summary.csv.
// records must hold every run of s.
func WriteSweepCSV(w io.Writer, s *Sweep, records []RunRecord) error {
	c := NewSweepCSV(w, s)
	if err := c.Write(records); err != nil {
		return err
	}
	return c.Flush()
}

// SweepCSV writes sweep.csv a part at a time, as WriteSweepCSV does at
// once: a sweep gathered a point at a time writes each point's rows.
type SweepCSV struct {
	cw *csv.Writer
	s  *Sweep
}

// NewSweepCSV starts sweep.csv of s on w with its header.
func NewSweepCSV(w io.Writer, s *Sweep) *SweepCSV {
	cw := csv.NewWriter(w)
	header := []string{"point"}
	for _, a := range s.Axes {
		header = append(header, a.Path)
	}
	header = append(header, "strategy", "run", "recovered")
	for _, c := range summaryColumns {
		header = append(header, c.name)
	}
	cw.Write(header)
	return &SweepCSV{cw: cw, s: s}
}

// Write writes the rows of records, in order.
func (c *SweepCSV) Write(records []RunRecord) error {
	for i := range records {
		r := &records[i]
		row := []string{strconv.Itoa(r.Point)}
		row = append(row, c.s.Points[r.Point].Values...)
		row = append(row, r.Strategy, strconv.Itoa(r.Run), strconv.FormatBool(r.Figures.RecoveryTimeS != nil))
		for _, col := range summaryColumns {
			cell := ""
			if x := col.get(&r.Figures); x != nil {
				cell = strconv.FormatFloat(*x, 'g', -1, 64)
			}
			row = append(row, cell)
		}
		c.cw.Write(row)
	}
	return c.cw.Error()
}

// Flush writes out what the writer holds.
func (c *SweepCSV) Flush() error {
	c.cw.Flush()
	return c.cw.Error()
}

// PooledLatency merges the latency histograms of records, exactly, and
// returns the latency of every delivered request they hold: quantiles of
// the merged histogram, the mean weighted by deliveries.
func PooledLatency(records []*RunRecord) (Latency, error) {
	l := NewLatencies()
	var sum float64
	for _, r := range records {
		n, err := r.addTo(l)
		if err != nil {
			return Latency{}, err
		}
		sum += r.Figures.LatencyS.Mean * float64(n)
	}
	n := l.TotalCount()
	if n == 0 {
		return Latency{}, nil
	}
	q := latencyQuantiles(l)
	return Latency{Mean: sum / float64(n), P50: micros(q[0]), P90: micros(q[1]), P99: micros(q[2]), Max: micros(q[3])}, nil
}
