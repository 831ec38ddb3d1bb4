package results

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path"
	"slices"
	"strings"
)

// Image is a chart of a report: its file beside the report, a caption,
// and for report.html its bytes.
type Image struct {
	File    string // such as load.png
	Caption string
	Data    []byte
}

// mime returns the image's media type, from its file name.
func (im Image) mime() string {
	if path.Ext(im.File) == ".svg" {
		return "image/svg+xml"
	}
	return "image/png"
}

// header is the line under a report's title: seed, runs, buckets and
// capacity.
func header(s *Summary) string {
	line := fmt.Sprintf("Seed %d, %d run(s), buckets of %ss", s.Seed, s.Runs, Decimal(s.BucketS))
	if s.CapacityPerS != nil {
		line += fmt.Sprintf(", server capacity %s requests/s", Count(*s.CapacityPerS))
	}
	return line + "."
}

// WriteReport writes report.md: the scenario and its description, the
// takeaways, the summary table and the charts, embedded by file name.
func WriteReport(w io.Writer, s *Summary, images []Image) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %s\n\n", s.Scenario)
	if s.Description != "" {
		fmt.Fprintf(bw, "%s\n\n", strings.TrimSpace(s.Description))
	}
	if s.Partial {
		bw.WriteString("**Partial results: the run was interrupted.**\n\n")
	}
	bw.WriteString(header(s) + "\n\n")
	if ts := Takeaways(s); len(ts) > 0 {
		bw.WriteString("## Takeaways\n\n")
		for _, t := range ts {
			bw.WriteString("- " + t + "\n")
		}
		bw.WriteString("\n")
	}
	bw.WriteString("## Summary\n\n")
	writeTable(bw, tableRows(s))
	if rows := serviceRows(s); rows != nil {
		bw.WriteString("\n## Services\n\nEvery service of the graph, per strategy: the attempts that reached it, from every caller, per fleet request (amplification), its peak load after the outage, when it recovered, and its work done for no one (wasted: its caller had given up; late: after the fleet's deadline) or dropped at its propagated deadline.\n\n")
		writeTable(bw, rows)
	}
	if s.Runs > 1 {
		bw.WriteString("\nFigures are means over the runs; summary.json holds their 95% confidence half-widths (ci95).\n")
	}
	if note := clientNote(s); note != "" {
		bw.WriteString("\n" + note + "\n")
	}
	if len(s.ReadFrom) > 0 {
		bw.WriteString("\n## Read from configuration files\n\nThese fields were read from the files that the scenario's from: names, at load time; a default is one the file leaves out, filled in as its project documents it.\n\n")
		writeTable(bw, readFromRows(s))
	}
	writeCharts(bw, images)
	files := "summary.json, summary.csv, timeseries.csv"
	if serviceRows(s) != nil {
		files += ", services.csv"
	}
	bw.WriteString("\nFiles: " + files + ", report.html.\n")
	return bw.Flush()
}

// readFromRows is the table of the fields read from configuration files.
func readFromRows(s *Summary) [][]string {
	rows := [][]string{{"field", "read at"}}
	for _, f := range s.ReadFrom {
		rows = append(rows, []string{"`" + f.Field + "`", f.At})
	}
	return rows
}

// clientNote says which strategies were played by the user's own client
// code (herdtest) rather than simulated, and whether each gave the same
// results twice for one seed; "" when none was.
func clientNote(s *Summary) string {
	var same, differ, unchecked []string
	for _, st := range s.Strategies {
		switch c := st.Client; {
		case c == nil:
		case c.Deterministic == nil:
			unchecked = append(unchecked, st.Name)
		case *c.Deterministic:
			same = append(same, st.Name)
		default:
			differ = append(differ, st.Name)
		}
	}
	var parts []string
	if len(same) > 0 {
		parts = append(parts, strings.Join(same, ", ")+" gave the same results twice for one seed")
	}
	if len(differ) > 0 {
		parts = append(parts, strings.Join(differ, ", ")+" did not: it draws randomness herdlab does not seed (math/rand's global source, the clock), and its figures vary from run to run: read them over several runs, with their confidence intervals")
	}
	if len(unchecked) > 0 {
		parts = append(parts, strings.Join(unchecked, ", ")+" was not checked for it")
	}
	if len(parts) == 0 {
		return ""
	}
	n := len(same) + len(differ) + len(unchecked)
	return fmt.Sprintf("Played by your own client code through herdtest, not simulated (%d strategies): %s.", n, strings.Join(parts, "; "))
}

// writeTable writes rows as a Markdown table, the first row the header.
func writeTable(bw *bufio.Writer, rows [][]string) {
	for i, row := range rows {
		bw.WriteString("| " + strings.Join(row, " | ") + " |\n")
		if i == 0 {
			bw.WriteString("|" + strings.Repeat(" --- |", len(row)) + "\n")
		}
	}
}

// writeCharts writes a report's Charts section, the images embedded by
// file name; nothing without images.
func writeCharts(bw *bufio.Writer, images []Image) {
	if len(images) == 0 {
		return
	}
	bw.WriteString("\n## Charts\n")
	for _, im := range images {
		fmt.Fprintf(bw, "\n![%s](%s)\n", im.Caption, im.File)
	}
}

var reportHTML = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.S.Scenario}}: herdlab report</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 1240px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
img { max-width: 100%; border: 1px solid #eee; margin: 1em 0 0.2em; }
figcaption { color: #555; font-size: 0.9em; }
.partial { color: #b00; font-weight: bold; }
</style>
</head>
<body>
<h1>{{.S.Scenario}}</h1>
{{with .S.Description}}<p>{{.}}</p>{{end}}
{{if .S.Partial}}<p class="partial">Partial results: the run was interrupted.</p>{{end}}
<p>{{.Header}}</p>
{{with .Takeaways}}<h2>Takeaways</h2>
<ul>{{range .}}
<li>{{.}}</li>{{end}}
</ul>{{end}}
<h2>Summary</h2>
<table>
<tr>{{range index .Rows 0}}<th>{{.}}</th>{{end}}</tr>
{{range slice .Rows 1}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{with .Services}}<h2>Services</h2>
<table>
<tr>{{range index . 0}}<th>{{.}}</th>{{end}}</tr>
{{range slice . 1}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{if gt .S.Runs 1}}<p>Figures are means over the runs; summary.json holds their 95% confidence half-widths (ci95).</p>{{end}}
{{with .Client}}<p>{{.}}</p>{{end}}
{{if or .Images .Live}}<h2>Charts</h2>{{end}}
{{with .Live}}<style>{{.Style}}</style>
<div id="herdlab-charts"></div>
<noscript><p>The charts are drawn with JavaScript; report.md shows them as images.</p></noscript>
<script>{{.Script}}</script>
<script>window.herdlabReport = HerdlabCharts.render(document.getElementById("herdlab-charts"), {{.Summary}}, {{.Charts}});</script>{{end}}
{{range .Images}}
<figure><img src="{{.Src}}" alt="{{.Caption}}"><figcaption>{{.Caption}}</figcaption></figure>{{end}}
</body>
</html>
`))

// Interactive is what report.html needs to draw its charts in the page,
// with zoom, values on hover and strategies toggled: the chart data and
// the chart component (web.ChartScript and web.ChartStyle), which the
// page inlines, offline as ever.
type Interactive struct {
	Charts        *Charts
	Script, Style string
}

// interactiveCharts are the charts the chart component draws: with it,
// report.html leaves out their images (report.md keeps them).
var interactiveCharts = []string{"load", "recovery", "latency", "queue", "amplification", "services-load"}

// WriteHTML writes report.html: the report of WriteReport as one
// self-contained page. With live, the charts the chart component draws
// are drawn in the page from the data inlined, and the other images (a
// graph's layers and diagram) are inlined; without it, every image is.
func WriteHTML(w io.Writer, s *Summary, images []Image, live *Interactive) error {
	type img struct {
		Src     template.URL
		Caption string
	}
	type component struct {
		Summary *Summary
		Charts  *Charts
		Script  template.JS
		Style   template.CSS
	}
	data := struct {
		S         *Summary
		Header    string
		Takeaways []string
		Rows      [][]string
		Services  [][]string
		Client    string
		Live      *component
		Images    []img
	}{S: s, Header: header(s), Takeaways: Takeaways(s), Rows: tableRows(s), Services: serviceRows(s), Client: clientNote(s)}
	if live != nil {
		// The script is inlined as is: it must not end its element early.
		script := strings.ReplaceAll(live.Script, "</script", `<\/script`)
		data.Live = &component{Summary: s, Charts: live.Charts, Script: template.JS(script), Style: template.CSS(live.Style)}
	}
	for _, im := range images {
		name := strings.TrimSuffix(im.File, path.Ext(im.File))
		if live != nil && slices.Contains(interactiveCharts, name) {
			continue
		}
		src := "data:" + im.mime() + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
		data.Images = append(data.Images, img{Src: template.URL(src), Caption: im.Caption})
	}
	return reportHTML.Execute(w, data)
}

// Takeaways returns a few sentences that say what the figures show, in
// a fixed order: in a graph, the service each strategy hurts most; the
// herds (peaks well above capacity) and the calmest strategies, recovery,
// what was given up, duplicates and the least work. A strategy is praised
// for a low load, a fast recovery or little work only with the share of
// its requests that it gave up on beside it, and one that left nothing to
// recover (it gave up, or delivered, everything before the outage ended)
// is never called fast or calm: it is said so.
//
// In a graph of two or more services, the load and the work are those of
// the service each strategy hurts most (StrategySummary.Worst), named;
// recovery and duplicates are the front's (the service the fleet calls),
// named too. A peak is "near capacity" from half to 1.5 times it, "well
// below capacity" under half.
func Takeaways(s *Summary) []string {
	var out []string
	sts := s.Strategies
	if len(sts) == 0 {
		return nil
	}
	bucket := Seconds(&s.BucketS, "")
	after := " after the outage"
	if len(s.Outages) == 0 {
		after = ""
	}
	front, graph := "", false
	for i := range sts {
		if sts[i].Worst != nil {
			graph, front = true, sts[i].Front()
			break
		}
	}
	if graph {
		out = append(out, hurtLine(sts, after))
	}

	// The herds: peaks after the outage at several times capacity. A
	// strategy that left nothing, or delivered nothing, is never calm:
	// its clients had stopped.
	var near, below []string
	calm := 0
	for i := range sts {
		st := &sts[i]
		h := hurtOf(st)
		if h.ratio == nil || st.Recovery == NothingLeft {
			continue
		}
		at := ""
		if h.service != "" {
			at = " at " + h.service
		}
		switch r := *h.ratio; {
		case r >= 2 && h.service != "":
			out = append(out, fmt.Sprintf("%s: %s attempts within %s at t = %s on %s, %sx its capacity.",
				st.Name, Count(h.peak), bucket, Seconds(&h.at, ""), h.service, Decimal(r)))
		case r >= 2:
			out = append(out, fmt.Sprintf("%s: %s attempts within %s at t = %s, %sx capacity.",
				st.Name, Count(h.peak), bucket, Seconds(&h.at, ""), Decimal(r)))
		case r <= 1.5 && st.Delivered > 0:
			calm++
			text := fmt.Sprintf("%s (%sx%s; %s)", st.Name, Decimal(r), at, shares(st))
			if r >= nearCapacity {
				near = append(near, text)
			} else {
				below = append(below, text)
			}
		}
	}
	if calm > 0 && calm < len(sts) {
		if len(near) > 0 {
			out = append(out, "Peak load"+after+" stays near capacity with "+strings.Join(near, ", ")+".")
		}
		if len(below) > 0 {
			out = append(out, "Peak load"+after+" stays well below capacity with "+strings.Join(below, ", ")+".")
		}
	}

	// What was left to recover: a strategy that gave up during the
	// outage may leave a healthy server and nothing to do.
	for _, st := range sts {
		switch st.Recovery {
		case NothingLeft:
			out = append(out, fmt.Sprintf("%s left nothing to recover: by the end of the outage it had given up on %s requests (%s%%), so its load and recovery after it say nothing of speed.",
				st.Name, Count(st.DeadLetteredInOutage), Percent(share(st.DeadLetteredInOutage, st.Requests))))
		case Mixed:
			if st.NothingLeftRuns > 0 {
				out = append(out, fmt.Sprintf("%s left nothing to recover in %d of %d runs (it had given up on every request still waiting).", st.Name, st.NothingLeftRuns, s.Runs))
			}
		}
	}

	// Recovery, ranked among the strategies that recovered from a backlog
	// and delivered something: a server whose clients gave up on every
	// request is idle, not recovered.
	var never []string
	var recovered []StrategySummary
	for _, st := range sts {
		switch {
		case st.Recovery == NoOutage || st.Recovery == NothingLeft:
		case st.RecoveryTimeS == nil:
			never = append(never, st.Name)
		case st.Delivered > 0:
			recovered = append(recovered, st)
		}
	}
	of, server := "", "The server"
	if front != "" {
		of, server = " of "+front+" (the front)", front+" (the front)"
	}
	if len(s.Outages) > 0 && len(recovered) > 0 {
		byTime := func(a, b StrategySummary) int { return cmpFloat(*a.RecoveryTimeS, *b.RecoveryTimeS) }
		best, worst := slices.MinFunc(recovered, byTime), slices.MaxFunc(recovered, byTime)
		line := fmt.Sprintf("Fastest recovery%s after the outage: %s, %s (%s)", of, best.Name, Seconds(best.RecoveryTimeS, ""), shares(&best))
		if worst.Name != best.Name && *worst.RecoveryTimeS > *best.RecoveryTimeS {
			line += fmt.Sprintf("; slowest: %s, %s (%s)", worst.Name, Seconds(worst.RecoveryTimeS, ""), shares(&worst))
		}
		out = append(out, line+".")
	}
	if len(never) > 0 {
		out = append(out, server+" never recovered within the horizon with "+strings.Join(never, ", ")+".")
	}
	for _, st := range sts {
		if n := st.RecoveredRuns; s.Runs > 1 && st.Recovery == Mixed && n > 0 && n < s.Runs {
			out = append(out, fmt.Sprintf("%s recovered in %d of %d runs.", st.Name, n, s.Runs))
		}
	}
	for _, st := range sts {
		if st.Delivered == 0 && st.Requests > 0 && st.Recovery != NothingLeft {
			out = append(out, fmt.Sprintf("%s delivered nothing: its clients gave up on every request, so its load, recovery and drain after the outage are no merit.", st.Name))
		}
	}

	// Losses and duplicates.
	at := ""
	if front != "" {
		at = " at " + front
	}
	for _, st := range sts {
		if st.DeadLettered > 0 && st.DeliveredRatio < 0.99 {
			out = append(out, fmt.Sprintf("%s delivered %s%% of requests; %s went to the dead-letter queue (%s).",
				st.Name, Percent(st.DeliveredRatio), Count(st.DeadLettered), reasons(st.DeadLetteredBy)))
		}
		if st.Duplicates > 0 {
			out = append(out, fmt.Sprintf("%s: %s requests were processed more than once%s (duplicates).", st.Name, Count(st.Duplicates), at))
		}
	}

	// The least work: in a graph, at the service each strategy hurts
	// most.
	if len(sts) > 1 {
		byWork := func(a, b StrategySummary) int { return cmpFloat(hurtOf(&a).amp, hurtOf(&b).amp) }
		least, most := slices.MinFunc(sts, byWork), slices.MaxFunc(sts, byWork)
		l, m := hurtOf(&least), hurtOf(&most)
		switch {
		case m.amp <= l.amp:
		case graph:
			out = append(out, fmt.Sprintf("Least work at the service each strategy hurts most: %s, %sx attempts per fleet request at %s (%s; most: %s, %sx at %s).",
				least.Name, Decimal(l.amp), l.service, shares(&least), most.Name, Decimal(m.amp), m.service))
		default:
			out = append(out, fmt.Sprintf("Least work: %s, %sx attempts per request (%s; most: %s, %sx).",
				least.Name, Decimal(l.amp), shares(&least), most.Name, Decimal(m.amp)))
		}
	}
	return out
}

// nearCapacity is the least peak load, over capacity, that a takeaway
// calls near capacity (up to 1.5); below it, the load is well below.
const nearCapacity = 0.5

// hurt is what a takeaway says of a strategy's load and work: in a graph,
// of the service it hurts most (named), else of the server.
type hurt struct {
	service       string // "" for one server
	peak, at, amp float64
	ratio         *float64
}

func hurtOf(st *StrategySummary) hurt {
	if w := st.Worst; w != nil {
		return hurt{service: w.Name, peak: w.PeakLoad, at: w.PeakAtS, amp: w.Amplification, ratio: w.PeakLoadRatio}
	}
	return hurt{peak: st.PeakLoad, at: st.PeakAtS, amp: st.Amplification, ratio: st.PeakLoadRatio}
}

// hurtLine names the service each strategy of a graph hurts most, with
// its peak load over capacity and its amplification.
func hurtLine(sts []StrategySummary, after string) string {
	parts := make([]string, 0, len(sts))
	for i := range sts {
		st := &sts[i]
		if st.Worst == nil {
			continue
		}
		w := st.Worst
		load := "unlimited capacity"
		if w.PeakLoadRatio != nil {
			load = "peak " + Decimal(*w.PeakLoadRatio) + "x its capacity"
		}
		parts = append(parts, fmt.Sprintf("%s, %s (%s, %sx attempts per fleet request)", st.Name, w.Name, load, Decimal(w.Amplification)))
	}
	return fmt.Sprintf("The service each strategy hurts most (the highest peak load%s over capacity): %s.", after, strings.Join(parts, "; "))
}

// shares says what became of a strategy's requests, for a sentence that
// praises it: "all delivered", or "96% delivered, 4% given up".
func shares(st *StrategySummary) string {
	if st.Delivered == st.Requests {
		return "all delivered"
	}
	text := Percent(st.DeliveredRatio) + "% delivered, " + Percent(share(st.DeadLettered, st.Requests)) + "% given up"
	if st.Unfinished > 0 {
		text += ", " + Percent(share(st.Unfinished, st.Requests)) + "% unfinished"
	}
	return text
}

// share returns part / whole, 0 for an empty whole.
func share(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return part / whole
}

// reasons lists dead-letter reasons with their counts, largest first;
// a single reason goes without its count.
func reasons(by map[string]float64) string {
	keys := make([]string, 0, len(by))
	for k, n := range by {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmpFloat(by[b], by[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if len(keys) == 1 {
		return keys[0]
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %s", Count(by[k]), k)
	}
	return strings.Join(parts, ", ")
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
