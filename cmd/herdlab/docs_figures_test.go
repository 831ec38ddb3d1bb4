//go:build !race

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The figures the README and the docs state about shipped scenarios are
// checked here against what herdlab run writes now: a change that moves
// a figure fails this test, which names the page, what it says and what
// the run says. make check runs it (and so does make test, without the
// race detector, under which the runs take minutes).

// docFigure is one statement of a page: Text, with each {} replaced by
// a figure of the scenario's summary.json, formatted, must appear in the
// page (spaces and line breaks alike).
type docFigure struct {
	page     string // under the repository's root
	scenario string // scenarios/NAME.yaml
	text     string
	figures  []fig
}

// fig is a figure of summary.json by path (strategies[NAME].FIELD,
// strategies[NAME].services[NAME].replicas[0].FIELD: a dotted path
// into objects, a list's item by name or index), divided by the figure
// at over when there is one (a share), and how the page writes it.
type fig struct {
	path, over string
	format     func(float64) string
}

func f(path string, format func(float64) string) fig { return fig{path: path, format: format} }

// share is the figure at path over the figure at over.
func share(path, over string, format func(float64) string) fig {
	return fig{path: path, over: over, format: format}
}

// Formats as the pages write figures.
var (
	// count: 123,000 or 7,400: thousands separated, rounded to the
	// hundred when round is 100.
	count = func(round float64) func(float64) string {
		return func(x float64) string { return commas(int64(roundTo(x, round))) }
	}
	// fixed: n decimals.
	fixed = func(n int) func(float64) string {
		return func(x float64) string { return strconv.FormatFloat(x, 'f', n, 64) }
	}
	// pct: a ratio as a percentage with n decimals.
	pct = func(n int) func(float64) string {
		return func(x float64) string { return strconv.FormatFloat(100*x, 'f', n, 64) }
	}
)

// within writes nothing when the figure is in [lo, hi], and the figure
// when it is not, so that the page's words ("a third", "none") are
// checked too.
func within(lo, hi float64) func(float64) string {
	return func(x float64) string {
		if lo <= x && x <= hi {
			return ""
		}
		return fmt.Sprintf(" (the run says %v, not within [%v, %v])", x, lo, hi)
	}
}

func roundTo(x, step float64) float64 {
	if step <= 1 {
		return float64(int64(x + 0.5))
	}
	return float64(int64(x/step+0.5)) * step
}

func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// docRuns runs each shipped scenario once for every test of the binary.
var docRuns sync.Map // scenario -> *docRun

type docRun struct {
	once    sync.Once
	summary map[string]any
	report  string
	err     error
}

func runForDocs(t *testing.T, scenario string) *docRun {
	t.Helper()
	v, _ := docRuns.LoadOrStore(scenario, &docRun{})
	r := v.(*docRun)
	r.once.Do(func() {
		out, err := os.MkdirTemp("", "herdlab-docs-*")
		if err != nil {
			r.err = err
			return
		}
		defer os.RemoveAll(out)
		code, _, stderr := herdlab("run", "../../scenarios/"+scenario+".yaml", "--no-charts", "-q", "--out", out)
		if code != exitOK {
			r.err = fmt.Errorf("herdlab run %s: exit %d: %s", scenario, code, stderr)
			return
		}
		data, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err == nil {
			err = json.Unmarshal(data, &r.summary)
		}
		if err != nil {
			r.err = err
			return
		}
		report, err := os.ReadFile(filepath.Join(out, "report.md"))
		r.report, r.err = string(report), err
	})
	require.NoError(t, r.err)
	return r
}

var pathStep = regexp.MustCompile(`^([a-z_0-9]+)(?:\[([^\]]+)\])?$`)

// lookup finds a figure of summary.json by path.
func lookup(doc map[string]any, path string) (float64, error) {
	var at any = doc
	for _, step := range strings.Split(path, ".") {
		m := pathStep.FindStringSubmatch(step)
		obj, ok := at.(map[string]any)
		if m == nil || !ok {
			return 0, fmt.Errorf("%s: no %s", path, step)
		}
		at = obj[m[1]]
		if m[2] == "" {
			continue
		}
		list, _ := at.([]any)
		at = nil
		if i, err := strconv.Atoi(m[2]); err == nil && 0 <= i && i < len(list) {
			at = list[i]
			continue
		}
		for _, item := range list {
			if o, _ := item.(map[string]any); o != nil && o["name"] == m[2] {
				at = o
			}
		}
	}
	x, ok := at.(float64)
	if !ok {
		return 0, fmt.Errorf("%s: not a number: %v", path, at)
	}
	return x, nil
}

var spaces = regexp.MustCompile(`\s+`)

func TestDocsFigures(t *testing.T) {
	pages := map[string]string{}
	for _, d := range docFigures {
		t.Run(d.scenario+"/"+d.text, func(t *testing.T) {
			r := runForDocs(t, d.scenario)
			page, ok := pages[d.page]
			if !ok {
				page = spaces.ReplaceAllString(mustRead(t, "../../"+d.page), " ")
				pages[d.page] = page
			}
			text := d.text
			for _, fg := range d.figures {
				x, err := lookup(r.summary, fg.path)
				require.NoError(t, err)
				if fg.over != "" {
					y, err := lookup(r.summary, fg.over)
					require.NoError(t, err)
					x /= y
				}
				text = strings.Replace(text, "{}", fg.format(x), 1)
			}
			if strings.Count(d.text, "{}") != len(d.figures) {
				t.Fatalf("%q has %d {} for %d figures", d.text, strings.Count(d.text, "{}"), len(d.figures))
			}
			if !strings.Contains(page, text) {
				t.Errorf("%s should say what herdlab run scenarios/%s.yaml says now:\n\t%s", d.page, d.scenario, text)
			}
		})
	}
}

// TestREADMEDemoTable: the README's table of make demo is the table
// herdlab run writes into report.md, column by column (the README leaves
// some columns out).
func TestREADMEDemoTable(t *testing.T) {
	r := runForDocs(t, "thundering-herd")
	readme := markdownTable(mustRead(t, "../../README.md"), "| strategy |")
	report := markdownTable(r.report, "| strategy |")
	require.Len(t, readme, 6, "the README shows a header and 5 strategies")
	require.Equal(t, len(readme), len(report), "one row per strategy")
	col := map[string]int{}
	for i, h := range report[0] {
		col[h] = i
	}
	for i, row := range readme[1:] {
		for j, cell := range row {
			k, ok := col[readme[0][j]]
			if assert.True(t, ok, "the report has no column %q", readme[0][j]) {
				assert.Equal(t, report[i+1][k], cell, "README's demo table, %s, %s: make demo prints it differently now", row[0], readme[0][j])
			}
		}
	}
}

// markdownTable returns the cells of the first table whose header starts
// with head, separator row left out.
func markdownTable(text, head string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			if rows != nil {
				break
			}
			continue
		}
		if rows == nil && !strings.HasPrefix(line, head) {
			continue
		}
		if strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "|---") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return rows
}

func TestLookupAndFormats(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"strategies": [{"name": "a", "amplification": 2.5,
		"services": [{"name": "db", "amplification": 8.95}]}]}`), &doc))
	x, err := lookup(doc, "strategies[a].services[db].amplification")
	require.NoError(t, err)
	assert.Equal(t, 8.95, x)
	_, err = lookup(doc, "strategies[b].amplification")
	assert.Error(t, err)
	assert.Equal(t, "123,000", count(1000)(122_600))
	assert.Equal(t, "7,400", count(100)(7_382))
	assert.Equal(t, "2.74", fixed(2)(2.7401))
	assert.Equal(t, "99.7", pct(1)(0.9971))
}

// docFigures are the figures the pages state about shipped scenarios.
var docFigures = []docFigure{
	// The scenario library (docs/scenarios.md).
	{"docs/scenarios.md", "thundering-herd", "a fixed 60 s retry comes back as one {}x spike",
		[]fig{f("strategies[fixed-60s].peak_load_ratio", fixed(0))}},
	{"docs/scenarios.md", "flaky-dependency-75pct", "at 75% failures {}, {}, {}, {} and {} calls per request", []fig{
		f("strategies[3-retries].amplification", fixed(2)),
		f("strategies[3-retries-token-budget].amplification", fixed(2)),
		f("strategies[3-retries-breaker].amplification", fixed(2)),
		f("strategies[brooker-bucket].amplification", fixed(2)),
		f("strategies[brooker-breaker].amplification", fixed(2)),
	}},
	{"docs/scenarios.md", "layered-retries", "{} attempts per request at the database ({} a second at the peak, in the outage), against {} at the edge only and {}x with budgets at every layer; the inner retries buy {}% delivered against {}%", []fig{
		f("strategies[every-layer].services[db].amplification", fixed(0)),
		f("strategies[every-layer].services[db].peak_load_overall", count(100)),
		f("strategies[edge-only].services[db].amplification", fixed(1)),
		f("strategies[every-layer-budgets].services[db].amplification", fixed(0)),
		f("strategies[every-layer].delivered_ratio", pct(0)),
		f("strategies[edge-only].delivered_ratio", pct(0)),
	}},
	{"docs/scenarios.md", "queue-discipline", "FIFO delivers {}% of the requests in time, LIFO and adaptive LIFO {}%, CoDel {}% with a {} ms mean queueing delay", []fig{
		f("strategies[fifo].delivered_ratio", pct(1)),
		f("strategies[adaptive-lifo].delivered_ratio", pct(0)),
		f("strategies[codel].delivered_ratio", pct(0)),
		f("strategies[codel].services[api].queue_delay_s", func(x float64) string { return fixed(0)(1000 * x) }),
	}},
	{"docs/scenarios.md", "queue-discipline", "LIFO and adaptive LIFO {}%",
		[]fig{f("strategies[lifo].delivered_ratio", pct(0))}},
	{"docs/scenarios.md", "deadline-propagation", "without deadlines {} pieces of work after the client left and no recovery ({}% delivered); with them none, and recovery at once ({}%)", []fig{
		f("strategies[no-deadlines].services[index].wasted_work", count(1000)),
		f("strategies[no-deadlines].delivered_ratio", pct(0)),
		f("strategies[deadline-propagation].delivered_ratio", pct(0)),
	}},
	{"docs/scenarios.md", "lb-sinkhole", "a replica that fails fast draws {}% of attempts under least-outstanding ({}% delivered); power of two with outlier detection {}% ({}%)", []fig{
		share("strategies[least-outstanding].services[store].replicas[0].attempts", "strategies[least-outstanding].services[store].attempts", pct(0)),
		f("strategies[least-outstanding].delivered_ratio", pct(0)),
		share("strategies[p2c-health].services[store].replicas[0].attempts", "strategies[p2c-health].services[store].attempts", pct(0)),
		f("strategies[p2c-health].delivered_ratio", pct(2)),
	}},
	{"docs/scenarios.md", "slow-replica", "random sends it a third (p99 {} s), power of two {}% (p99 {} s)", []fig{
		f("strategies[random].latency_s.p99", fixed(0)),
		share("strategies[power-of-two].services[store].replicas[0].attempts", "strategies[power-of-two].services[store].attempts", pct(0)),
		f("strategies[power-of-two].latency_s.p99", fixed(2)),
	}},
	{"docs/scenarios.md", "slow-replica", "random sends it a third{}",
		[]fig{share("strategies[random].services[store].replicas[0].attempts", "strategies[random].services[store].attempts", within(0.32, 0.35))}},
	{"docs/scenarios.md", "checkout", "retries everywhere do {} late payments and {} duplicate checkouts; budgets with deadlines none, p99 {} ms, and give up {}%", []fig{
		f("strategies[retry-everywhere].services[payments].late_work", count(1000)),
		f("strategies[retry-everywhere].duplicates", count(100)),
		f("strategies[budgets-deadlines].latency_s.p99", func(x float64) string { return fixed(0)(1000 * x) }),
		f("strategies[budgets-deadlines].delivered_ratio", func(x float64) string { return pct(0)(1 - x) }),
	}},
	{"docs/scenarios.md", "checkout", "budgets with deadlines none{},",
		[]fig{f("strategies[budgets-deadlines].services[payments].late_work", within(0, 0))}},
	{"docs/scenarios.md", "hedging-latch", "the service never recovers ({}% delivered, late); retrying slow requests is worse ({}%); with cancel, or with Brooker's bucket ({} copies per request)", []fig{
		f("strategies[hedge].delivered_ratio", pct(0)),
		f("strategies[retry-slow].delivered_ratio", pct(0)),
		f("strategies[hedge-budget].amplification", fixed(2)),
	}},
	{"docs/scenarios.md", "overload-controls", "plain retries {} attempts per request; gRPC tokens {}, Envoy's budget {} held by the fleet and {} by 10 proxies, SRE throttling {} ({} rejected locally), the AWS standard profile {}; AWS adaptive mode slows the clients to what is accepted ({} throttled against {}) and delivers {}%, late (p99 {} s)", []fig{
		f("strategies[retries].amplification", fixed(1)),
		f("strategies[grpc-tokens].amplification", fixed(2)),
		f("strategies[envoy-fleet].amplification", fixed(2)),
		f("strategies[envoy-per-proxy].amplification", fixed(2)),
		f("strategies[sre-throttle].amplification", fixed(2)),
		f("strategies[sre-throttle].client_rejected", count(1000)),
		f("strategies[aws-standard].amplification", fixed(2)),
		f("strategies[aws-adaptive].throttled", count(100)),
		f("strategies[retries].throttled", count(1000)),
		f("strategies[aws-adaptive].delivered_ratio", pct(1)),
		f("strategies[aws-adaptive].latency_s.p99", fixed(0)),
	}},
	{"docs/scenarios.md", "flaky-dependency-50pct-10-clients", "with 10 (token budget {}, breaker {}, bucket {} calls per request)", []fig{
		f("strategies[3-retries-token-budget].amplification", fixed(2)),
		f("strategies[3-retries-breaker].amplification", fixed(2)),
		f("strategies[brooker-bucket].amplification", fixed(2)),
	}},
	{"docs/scenarios.md", "flaky-dependency-50pct-1000-clients", "with 1,000 (token budget {}, breaker never trips, bucket {}); only his cumulative breaker stays at {}", []fig{
		f("strategies[3-retries-token-budget].amplification", fixed(2)),
		f("strategies[brooker-bucket].amplification", fixed(2)),
		f("strategies[brooker-breaker].amplification", fixed(2)),
	}},
	{"docs/scenarios.md", "open-loop", "3 retries make {} calls per request in an open loop", []fig{
		f("strategies[3-retries].amplification", fixed(2)),
	}},
	{"docs/scenarios.md", "open-loop", "in an open loop backoff changes nothing ({} calls a minute)", []fig{
		f("strategies[3-retries-backoff].attempts", count(1000)),
	}},
	{"docs/scenarios.md", "open-loop", "in an open loop backoff changes nothing ({} calls a minute)", []fig{
		f("strategies[3-retries].attempts", count(1000)),
	}},
	{"docs/scenarios.md", "closed-loop", "and {} in a closed one", []fig{
		f("strategies[3-retries].amplification", fixed(2)),
	}},
	{"docs/scenarios.md", "closed-loop", "in a closed loop clients that back off make {} calls against {}", []fig{
		f("strategies[3-retries-backoff].attempts", count(100)),
		f("strategies[3-retries].attempts", count(100)),
	}},
	{"docs/scenarios.md", "real-graph", "{} database attempts per request with 3 attempts at each inner layer ({}/s at the peak), {} with retries at the edge only", []fig{
		f("strategies[every-layer].services[db].amplification", fixed(0)),
		f("strategies[every-layer].services[db].peak_load_overall", count(100)),
		f("strategies[edge-only].services[db].amplification", fixed(1)),
	}},

	// The overload controls (docs/overload.md).
	{"docs/overload.md", "overload-controls", "| plain retries | {} | | gRPC tokens | {} | | Envoy's budget, held by the fleet | {} | | Envoy's budget, held by 10 proxies | {} | | SRE throttling ({} rejected locally) | {} | | the AWS standard profile | {} |", []fig{
		f("strategies[retries].amplification", fixed(1)),
		f("strategies[grpc-tokens].amplification", fixed(2)),
		f("strategies[envoy-fleet].amplification", fixed(2)),
		f("strategies[envoy-per-proxy].amplification", fixed(2)),
		f("strategies[sre-throttle].client_rejected", count(1000)),
		f("strategies[sre-throttle].amplification", fixed(2)),
		f("strategies[aws-standard].amplification", fixed(2)),
	}},
	{"docs/overload.md", "overload-controls", "what the server accepts: {} requests throttled, against {} for plain retries. It delivers {}%, late (p99 {} s)", []fig{
		f("strategies[aws-adaptive].throttled", count(100)),
		f("strategies[retries].throttled", count(1000)),
		f("strategies[aws-adaptive].delivered_ratio", pct(1)),
		f("strategies[aws-adaptive].latency_s.p99", fixed(0)),
	}},
}
