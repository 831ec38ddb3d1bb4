package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// This file holds what the charts of a service graph share (which
// summaries are graphs, the layers of the graph) and the picture of the
// graph itself.

// hasGraph reports whether s is the summary of a service graph: its
// strategies have services. A single server's has none.
func hasGraph(s *results.Summary) bool {
	return s != nil && len(s.Strategies) > 0 && len(s.Strategies[0].Services) > 0
}

// checkGraph reports a summary that cannot be drawn as a graph.
func checkGraph(s *results.Summary, o Options) error {
	if err := checkInputs(s, o); err != nil {
		return err
	}
	if !hasGraph(s) {
		return fmt.Errorf("%w: no services: not a service graph", ErrSummary)
	}
	return nil
}

// serviceFigures returns the figures of the service named name in st.
func serviceFigures(st results.StrategySummary, name string) (results.ServiceFigures, bool) {
	i := slices.IndexFunc(st.Services, func(f results.ServiceFigures) bool { return f.Name == name })
	if i < 0 {
		return results.ServiceFigures{}, false
	}
	return st.Services[i], true
}

// edgeFigures returns the figures of the edge from caller to callee in st
// ("" is the fleet).
func edgeFigures(st results.StrategySummary, from, to string) (results.EdgeFigures, bool) {
	i := slices.IndexFunc(st.Edges, func(e results.EdgeFigures) bool { return e.From == from && e.To == to })
	if i < 0 {
		return results.EdgeFigures{}, false
	}
	return st.Edges[i], true
}

// graphLayout is the fleet and the services of a graph in layers: node 0
// is the fleet, nodes 1... the services in file order (of the first
// strategy, then any that only later ones have). A node's layer is the
// longest path to it from the fleet, in call edges: the service the
// fleet calls is in layer 1 (unless a service calls it too), the
// services it calls in layer 2, and so on. A service no path reaches
// goes in layer 1.
type graphLayout struct {
	names  []string // node names; the fleet's is ""
	layer  []int    // each node's layer
	layers [][]int  // the nodes of each layer, in their order top to bottom (or left to right)
	edges  [][2]int // call edges as (caller, callee) nodes, in the summary's order
	target string   // the service the fleet calls
}

// newGraphLayout returns the layout of the graph of s: its services and
// the edges of every strategy (they share one graph).
func newGraphLayout(s *results.Summary) graphLayout {
	g := graphLayout{names: []string{""}}
	index := map[string]int{"": 0}
	node := func(name string) int {
		if i, ok := index[name]; ok {
			return i
		}
		index[name] = len(g.names)
		g.names = append(g.names, name)
		return index[name]
	}
	for _, st := range s.Strategies {
		for _, f := range st.Services {
			node(f.Name)
		}
	}
	seen := map[[2]int]bool{}
	for _, st := range s.Strategies {
		for _, e := range st.Edges {
			k := [2]int{node(e.From), node(e.To)}
			if !seen[k] {
				seen[k] = true
				g.edges = append(g.edges, k)
			}
			if e.From == "" && g.target == "" {
				g.target = e.To
			}
		}
	}
	if g.target == "" && len(g.names) > 1 {
		g.target = g.names[1]
	}

	// Longest paths from the fleet: relax every edge until nothing
	// changes, at most once per node, leaving out the edges that close a
	// cycle (which a valid graph does not have).
	n := len(g.names)
	back := g.backEdges()
	g.layer = make([]int, n)
	for i := range g.layer {
		g.layer[i] = -1
	}
	g.layer[0] = 0
	for range n {
		changed := false
		for k, e := range g.edges {
			if u, v := e[0], e[1]; !back[k] && g.layer[u] >= 0 && g.layer[u]+1 > g.layer[v] && g.layer[u]+1 < n && v != 0 {
				g.layer[v] = g.layer[u] + 1
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	depth := 0
	for i := range g.layer {
		if g.layer[i] < 0 {
			g.layer[i] = 1
		}
		depth = max(depth, g.layer[i])
	}
	g.layers = make([][]int, depth+1)
	for i, l := range g.layer {
		g.layers[l] = append(g.layers[l], i)
	}

	// Within a layer, nodes ordered by the mean place of their callers in
	// the layers before (the barycentre heuristic: fewer crossings), in
	// file order where that ties.
	place := make([]float64, n)
	for l, nodes := range g.layers {
		for k, v := range nodes {
			place[v] = (float64(k) + 0.5) / float64(len(nodes))
		}
		if l == 0 {
			continue
		}
		key := make(map[int]float64, len(nodes))
		for _, v := range nodes {
			sum, count := 0.0, 0
			for _, e := range g.edges {
				if e[1] == v && g.layer[e[0]] < l {
					sum += place[e[0]]
					count++
				}
			}
			key[v] = place[v]
			if count > 0 {
				key[v] = sum / float64(count)
			}
		}
		slices.SortStableFunc(nodes, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
		for k, v := range nodes {
			place[v] = (float64(k) + 0.5) / float64(len(nodes))
		}
	}
	return g
}

// backEdges marks the edges that close a cycle: those to a node on the
// path of a depth-first search from the fleet (then from each node it
// did not reach, in order), edges in their order.
func (g graphLayout) backEdges() []bool {
	back := make([]bool, len(g.edges))
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(g.names))
	var visit func(u int)
	visit = func(u int) {
		state[u] = onPath
		for k, e := range g.edges {
			if e[0] != u {
				continue
			}
			switch state[e[1]] {
			case onPath:
				back[k] = true
			case unseen:
				visit(e[1])
			}
		}
		state[u] = done
	}
	for u := range g.names {
		if state[u] == unseen {
			visit(u)
		}
	}
	return back
}

// services returns the names of the services in layer order: layer by
// layer, each in its order.
func (g graphLayout) services() []string {
	var out []string
	for _, nodes := range g.layers[1:] {
		for _, v := range nodes {
			out = append(out, g.names[v])
		}
	}
	// A layout without services keeps layer 0 only.
	return out
}

// layerOf returns the layer of the service named name, 0 if none.
func (g graphLayout) layerOf(name string) int {
	if i := slices.Index(g.names, name); i > 0 {
		return g.layer[i]
	}
	return 0
}

// lanes returns how many lanes above the boxes (and as many below) the
// edges that skip a layer, or go back, may take: half of them, rounded
// up.
func (g graphLayout) lanes() int {
	n := 0
	for _, e := range g.edges {
		if g.layer[e[1]]-g.layer[e[0]] != 1 {
			n++
		}
	}
	return (n + 1) / 2
}

// widestLayer returns the most nodes in a layer.
func (g graphLayout) widestLayer() int {
	w := 1
	for _, nodes := range g.layers {
		w = max(w, len(nodes))
	}
	return w
}

// loadClass is a class of a service's peak load ratio in the graph
// chart.
type loadClass int

const (
	unlimitedLoad loadClass = iota // no capacity limit: no ratio
	lightLoad                      // below nearRatio
	nearLoad                       // from nearRatio to 1
	overLoad                       // above 1: more attempts than capacity
	numLoadClasses
)

// nearRatio is the peak load ratio from which a service is drawn as near
// its capacity.
const nearRatio = 0.8

// classOf returns the class of a peak load ratio (nil: unlimited).
func classOf(ratio *float64) loadClass {
	switch {
	case ratio == nil || math.IsNaN(*ratio):
		return unlimitedLoad
	case *ratio > 1:
		return overLoad
	case *ratio >= nearRatio:
		return nearLoad
	}
	return lightLoad
}

// loadClassNames and loadClassColors label and colour the classes: a
// sequential scale from green through amber to red (ColorBrewer's
// RdYlGn, ends and middle), pale enough for dark text, and grey for no
// ratio. Each box also writes its ratio, so that colour is not the only
// cue.
var (
	loadClassNames = [numLoadClasses]string{
		"no capacity limit (no ratio)",
		fmt.Sprintf("peak load below %s× capacity", decimal(nearRatio, 2)),
		fmt.Sprintf("%s× to 1× capacity", decimal(nearRatio, 2)),
		"above capacity",
	}
	loadClassColors = [numLoadClasses]color.Color{
		rgb(0xD4D4D4), // grey
		rgb(0x91CF60), // green
		rgb(0xFDBF4F), // amber
		rgb(0xE8563A), // red
	}
	fleetFill   = rgb(0xFFFFFF)
	edgeColor   = rgb(0x404040)
	panelBorder = rgb(0xD0D0D0)
)

// GraphChart draws the service graph of each strategy, a panel per
// strategy, each laid out the same: the fleet at the left, then the
// services layer by layer (a service's layer is its longest path from
// the fleet in call edges), each service a box filled by its peak load
// ratio after the outage (peak attempts per second over its capacity:
// green below 0.8, amber to 1, red above, grey when unlimited) and
// labelled with its name, the ratio, its replicas and its outages
// (results.Window.Service; one that names none is the outage of the
// service the fleet calls); an arrow per call edge, as thick
// as its amplification (attempts along it per fleet request, written on
// it) on one scale for every panel.
//
// The panels go in the grid that gives them the most room. When o
// leaves the width or the height at 0, the image grows from the default
// until every box has room for its text at the nominal font sizes;
// otherwise the text shrinks (to minShrink of its size) to fit. It is an
// error for s to have no services.
func GraphChart(s *results.Summary, o Options) (Chart, error) {
	if err := checkGraph(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": service graph"
	g := newGraphLayout(s)
	gt := newGraphText(s, g)
	w, h := o.size()
	th := newTheme(w, h)
	grown, cols := growForGraph(o, th, g, gt, len(s.Strategies))
	return renderIn("graph", title, grown, th, func(c draw.Canvas, th theme) {
		var legend []legendItem
		for k := lightLoad; k < numLoadClasses; k++ {
			legend = append(legend, legendItem{label: loadClassNames[k], thumb: boxThumb(loadClassColors[k], th)})
		}
		legend = append(legend,
			legendItem{label: loadClassNames[unlimitedLoad], thumb: boxThumb(loadClassColors[unlimitedLoad], th)},
			legendItem{label: "call: attempts along it per fleet request", thumb: arrowThumb(th)})
		f := figure{
			th:    th,
			title: title,
			subtitle: "Services in layers by their longest path from the fleet, filled by peak load after the outage over capacity; " +
				"each call labelled with its attempts per fleet request, thicker for more" + runsNote(s) + ".",
			legend: legend,
		}
		body := f.frame(c)
		drawGraphPanels(c, body, th, s, g, gt, cols)
	})
}

// graphText is the text and fill of each node of the graph per strategy.
type graphText struct {
	lines  [][][]string    // [strategy][node]: the name, then figures
	fills  [][]color.Color // [strategy][node]
	edges  [][]string      // [strategy][edge]: the label, "" for an edge the strategy lacks
	amps   [][]float64     // [strategy][edge]: the amplification
	topAmp float64         // the largest amplification of any edge
}

// newGraphText returns the text of the nodes and edges of g in each
// strategy of s.
func newGraphText(s *results.Summary, g graphLayout) graphText {
	var gt graphText
	for _, st := range s.Strategies {
		n := len(g.names)
		lines := make([][]string, n)
		fills := make([]color.Color, n)
		lines[0] = []string{"fleet", countLabel(st.Requests) + " requests"}
		fills[0] = fleetFill
		for v := 1; v < n; v++ {
			f, ok := serviceFigures(st, g.names[v])
			figure := "no capacity limit"
			switch {
			case !ok:
				figure = "not in this run"
			case f.PeakLoadRatio != nil:
				figure = "peak " + ratioText(*f.PeakLoadRatio) + "× capacity"
			}
			lines[v] = []string{g.names[v], figure}
			if len(f.Replicas) > 1 {
				lines[v] = append(lines[v], fmt.Sprintf("%d replicas", len(f.Replicas)))
			}
			if o := outagesText(serviceOutages(s, g, g.names[v])); o != "" {
				lines[v] = append(lines[v], o)
			}
			fills[v] = loadClassColors[classOf(f.PeakLoadRatio)]
			if !ok {
				fills[v] = loadClassColors[unlimitedLoad]
			}
		}
		labels := make([]string, len(g.edges))
		amps := make([]float64, len(g.edges))
		for k, e := range g.edges {
			if ef, ok := edgeFigures(st, g.names[e[0]], g.names[e[1]]); ok {
				labels[k] = decimal(ef.Amplification, 3) + "×"
				amps[k] = ef.Amplification
				gt.topAmp = max(gt.topAmp, ef.Amplification)
			}
		}
		gt.lines = append(gt.lines, lines)
		gt.fills = append(gt.fills, fills)
		gt.edges = append(gt.edges, labels)
		gt.amps = append(gt.amps, amps)
	}
	return gt
}

// outagesText describes a service's outages in its box: "outage: error
// 10–40 s", "outage: error 10–40 s, 1 replica", "3 outages, 10–90 s";
// "" for none.
func outagesText(ws []results.Window) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		w := ws[0]
		w.Service = "" // the box names it
		txt := fmt.Sprintf("%s %s–%s s", outageLabel(w), decimal(w.StartS, 4), decimal(w.EndS, 4))
		switch n := len(w.Replicas); n {
		case 0:
		case 1:
			txt += ", 1 replica"
		default:
			txt += fmt.Sprintf(", %d replicas", n)
		}
		return txt
	}
	lo, hi := ws[0].StartS, ws[0].EndS
	for _, w := range ws {
		lo, hi = min(lo, w.StartS), max(hi, w.EndS)
	}
	return fmt.Sprintf("%d outages, %s–%s s", len(ws), decimal(lo, 4), decimal(hi, 4))
}

// ratioText formats a ratio with 3 significant digits, and up to 6
// where 3 would round it to 1: a ratio just above 1 is not 1.
func ratioText(r float64) string {
	t := decimal(r, 3)
	for sig := 4; t == "1" && r != 1 && sig <= 6; sig++ {
		t = decimal(r, sig)
	}
	return t
}

// graphSizes are the sizes of the boxes and the room between them, at
// fonts shrunk by a factor.
type graphSizes struct {
	name, line, label text.Style
	bw, bh            vg.Length // a box
	colW, slotH       vg.Length // the least room for a layer and for a box in it
	headerH           vg.Length // the strategy's name above the graph
	laneGap           vg.Length // between the lanes of edges that skip layers
}

// minShrink is the least the graph chart shrinks its fonts to fit.
const minShrink = 0.55

// newGraphSizes returns the sizes of the boxes of gt at fonts k times
// their size: every box as wide as the widest text and as tall as the
// most lines, in every panel.
func newGraphSizes(th theme, gt graphText, k float64) graphSizes {
	z := graphSizes{
		name:    shrink(withFont(withAlign(th.annotation, draw.XCenter, draw.YTop), bold), k),
		line:    shrink(withAlign(th.annotation, draw.XCenter, draw.YTop), k),
		label:   shrink(withAlign(th.annotation, draw.XCenter, draw.YCenter), k),
		headerH: th.annotation.Height("Mg") + th.pad,
	}
	most := 1
	labels := []string{"0.000×"}
	for i, nodes := range gt.lines {
		for _, l := range nodes {
			z.bw = max(z.bw, z.name.Width(l[0]))
			for _, x := range l[1:] {
				z.bw = max(z.bw, z.line.Width(x))
			}
			most = max(most, len(l))
		}
		labels = append(labels, gt.edges[i]...)
	}
	pad := th.pad * vg.Length(k)
	z.bw += 2.4 * pad
	z.bh = z.name.FontExtents().Height + vg.Length(most-1)*z.line.FontExtents().Height + 1.6*pad
	// Between two layers, an arrow with its label and heads at both ends.
	gap := widest(z.label, labels) + 2*pad + 2*arrowHead(3*th.lw, th)
	z.colW = z.bw + max(0.45*z.bw, gap)
	z.slotH = 1.5 * z.bh
	z.laneGap = z.label.Height("Mg") + pad
	return z
}

// need returns the size of a panel of g that gives its boxes their room.
// Above and below the boxes, a lane for each edge that may have to go
// round them (see graphLayout.lanes).
func (z graphSizes) need(g graphLayout, th theme) vg.Point {
	return vg.Point{
		X: vg.Length(len(g.layers))*z.colW + 2*th.pad,
		Y: vg.Length(g.widestLayer())*z.slotH + 2*z.laneRoom(g) + z.headerH + th.pad,
	}
}

// laneRoom returns the height of the lanes above (or below) the boxes.
func (z graphSizes) laneRoom(g graphLayout) vg.Length {
	return vg.Length(g.lanes()) * z.laneGap
}

// graphGap is the gap between panels.
func graphGap(th theme) vg.Length { return 2 * th.pad }

// growForGraph returns o with the width and height it leaves at 0 grown
// so that the panels of the graph have the room of their boxes at the
// nominal font sizes, in the fewest columns whose image is no taller
// than maxGraphTall times its width (a report shows an image at the
// width of its column: the narrower, the larger its text), and those
// columns; with both given, o as it is and 0 columns (to be chosen to
// fit).
func growForGraph(o Options, th theme, g graphLayout, gt graphText, n int) (Options, int) {
	if o.Width != 0 && o.Height != 0 {
		return o, 0
	}
	need := newGraphSizes(th, gt, 1).need(g, th)
	gap := graphGap(th)
	// Pixels are 3/4 of a point; the frame's title, subtitle, legend and
	// margins take about graphChromeH pixels.
	px := func(l vg.Length) float64 { return float64(l) / 0.75 }
	const graphChromeH = 170
	var w, h, cols int
	for cols = 1; cols <= max(n, 1); cols++ {
		rows := (n + cols - 1) / cols
		w, h = o.Width, o.Height
		if w == 0 {
			need := px(vg.Length(cols)*need.X+vg.Length(cols-1)*gap) + 4*px(th.pad)
			w = min(max(DefaultWidth, int(math.Ceil(need))), 20000)
		}
		if h == 0 {
			need := px(vg.Length(rows)*need.Y+vg.Length(rows-1)*gap) + graphChromeH*th.scale
			h = min(max(DefaultHeight, int(math.Ceil(need))), 20000)
		}
		if float64(h) <= maxGraphTall*float64(w) {
			break
		}
	}
	o.Width, o.Height = w, h
	return o, min(cols, max(n, 1))
}

// maxGraphTall is how much taller than wide the graph chart grows before
// it takes another column of panels.
const maxGraphTall = 1.5

// graphFit returns how much of its room each panel of a grid of cols x
// rows in w x h has: the smaller of its width and height over need's.
func graphFit(w, h vg.Length, need vg.Point, gap vg.Length, cols, rows int) float64 {
	pw := (w - vg.Length(cols-1)*gap) / vg.Length(cols)
	ph := (h - vg.Length(rows-1)*gap) / vg.Length(rows)
	return math.Min(float64(pw/need.X), float64(ph/need.Y))
}

// boxThumb is the legend thumbnail of a service's box filled with clr.
func boxThumb(clr color.Color, th theme) func(draw.Canvas) {
	return func(c draw.Canvas) {
		r := c.Rectangle
		r.Min.X += r.Size().X * 0.15
		r.Max.X -= r.Size().X * 0.15
		p := roundedRect(r, 2*vg.Length(th.scale))
		c.SetColor(clr)
		c.Fill(p)
		c.SetLineStyle(draw.LineStyle{Color: edgeColor, Width: 0.8 * vg.Length(th.scale)})
		c.Stroke(p)
	}
}

// arrowThumb is the legend thumbnail of a call edge.
func arrowThumb(th theme) func(draw.Canvas) {
	return func(c draw.Canvas) {
		y := c.Center().Y
		drawArrow(c, []vg.Point{{X: c.Min.X, Y: y}, {X: c.Max.X, Y: y}}, th.lw*1.5, th)
	}
}

// drawGraphPanels lays the strategies' panels out in cols columns (when
// 0, in the grid that gives the boxes the most room), with fonts shrunk
// to fit it if need be, and draws them.
func drawGraphPanels(c, body draw.Canvas, th theme, s *results.Summary, g graphLayout, gt graphText, cols int) {
	n := len(s.Strategies)
	if n == 0 {
		return
	}
	gap := graphGap(th)
	size := body.Size()
	need := newGraphSizes(th, gt, 1).need(g, th)
	if cols <= 0 {
		best := -1.0
		for k := 1; k <= n; k++ {
			if fit := graphFit(size.X, size.Y, need, gap, k, (n+k-1)/k); fit > best*1.02 {
				best, cols = fit, k
			}
		}
	}
	rows := (n + cols - 1) / cols
	k := min(max(graphFit(size.X, size.Y, need, gap, cols, rows), minShrink), 1)
	z := newGraphSizes(th, gt, k)
	w := (size.X - vg.Length(cols-1)*gap) / vg.Length(cols)
	h := (size.Y - vg.Length(rows-1)*gap) / vg.Length(rows)
	header := withAlign(th.annotation, draw.XLeft, draw.YTop)
	colors := colorIndexes(s)
	for i, st := range s.Strategies {
		r, col := i/cols, i%cols
		x0 := body.Min.X + vg.Length(col)*(w+gap)
		y1 := body.Max.Y - vg.Length(r)*(h+gap)
		panel := vg.Rectangle{Min: vg.Point{X: x0, Y: y1 - h}, Max: vg.Point{X: x0 + w, Y: y1}}
		c.SetLineStyle(draw.LineStyle{Color: panelBorder, Width: 0.8 * vg.Length(th.scale)})
		c.Stroke(roundedRect(panel, th.pad))
		at := vg.Point{X: panel.Min.X + th.pad, Y: panel.Max.Y - th.pad/2}
		drawGraphHeader(c, header, at, w-2*th.pad, st, colors[i])
		area := panel
		area.Max.Y -= z.headerH
		area.Min.X += th.pad
		area.Max.X -= th.pad
		area.Min.Y += th.pad / 2
		drawGraph(c, area, th, z, g, gt, i)
	}
}

// drawGraphHeader writes the strategy's name in its colour, then as many
// of its figures as fit in width.
func drawGraphHeader(c draw.Canvas, sty text.Style, at vg.Point, width vg.Length, st results.StrategySummary, clr int) {
	drawHeader(c, sty, at, width, st.Name, clr, []string{
		fmt.Sprintf("%s attempts per request at the target", decimal(st.Amplification, 3)),
		fmt.Sprintf("%s delivered", percent(st.DeliveredRatio)),
	})
}

// drawGraph draws the graph of strategy i in area: the boxes, then the
// edges between them, then the edges' labels, then the boxes' text.
func drawGraph(c draw.Canvas, area vg.Rectangle, th theme, z graphSizes, g graphLayout, gt graphText, i int) {
	n := len(g.names)
	colW := (area.Max.X - area.Min.X) / vg.Length(len(g.layers))
	bw, bh := min(z.bw, 0.9*colW), z.bh
	// The boxes between the lanes, which take no more than a third of the
	// height.
	lanes := min(z.laneRoom(g), (area.Max.Y-area.Min.Y)/6)
	core := area
	core.Min.Y += lanes
	core.Max.Y -= lanes
	boxes := make([]vg.Rectangle, n)
	for l, nodes := range g.layers {
		cx := area.Min.X + (vg.Length(l)+0.5)*colW
		slot := (core.Max.Y - core.Min.Y) / vg.Length(len(nodes))
		for j, v := range nodes {
			cy := core.Max.Y - (vg.Length(j)+0.5)*slot
			boxes[v] = vg.Rectangle{Min: vg.Point{X: cx - bw/2, Y: cy - bh/2}, Max: vg.Point{X: cx + bw/2, Y: cy + bh/2}}
		}
	}

	radius := 3 * vg.Length(th.scale)
	for v, b := range boxes {
		p := roundedRect(b, radius)
		c.SetColor(gt.fills[i][v])
		c.Fill(p)
		sty := draw.LineStyle{Color: edgeColor, Width: 0.9 * vg.Length(th.scale)}
		if v == 0 {
			sty.Dashes = []vg.Length{3 * th.lw, 2 * th.lw}
		}
		c.SetLineStyle(sty)
		c.Stroke(p)
	}

	// Edges, then their labels over them, placed clear of the boxes, of
	// each other and of the other edges.
	slotH := (core.Max.Y - core.Min.Y) / vg.Length(g.widestLayer())
	from, to := edgePorts(g, boxes)
	routes := make([][]vg.Point, len(g.edges))
	var ls laneSet
	for k, e := range g.edges {
		if gt.edges[i][k] == "" {
			continue
		}
		pts, ok := routeEdge(boxes, e[0], e[1], from[k], to[k], slotH, area, routes[:k])
		if !ok {
			pts = ls.route(boxes, e[0], e[1], from[k], to[k], area, z.laneGap, colW-bw)
		}
		routes[k] = pts
	}
	taken := slices.Clone(boxes)
	for k, pts := range routes {
		if pts == nil {
			continue
		}
		width := th.lw * vg.Length(0.7+2.3*safeRatio(gt.amps[i][k], gt.topAmp))
		drawArrow(c, pts, width, th)
	}
	for k, pts := range routes {
		if pts == nil {
			continue
		}
		txt := gt.edges[i][k]
		others := slices.Concat(routes[:k], routes[k+1:])
		at := placeLabel(z.label, txt, pts, taken, others, area, th.pad/2)
		taken = append(taken, labelRect(z.label, txt, at, th.pad/2))
		textBox(c, z.label, at, txt, th.pad/2)
	}

	for v, b := range boxes {
		lines := gt.lines[i][v]
		textClr := color.Color(color.Black)
		if isDark(gt.fills[i][v]) {
			textClr = color.White
		}
		h := z.name.FontExtents().Height + vg.Length(len(lines)-1)*z.line.FontExtents().Height
		y := (b.Min.Y+b.Max.Y)/2 + h/2
		cx := (b.Min.X + b.Max.X) / 2
		c.FillText(withColor(z.name, textClr), vg.Point{X: cx, Y: y}, lines[0])
		y -= z.name.FontExtents().Height
		for _, line := range lines[1:] {
			c.FillText(withColor(z.line, textClr), vg.Point{X: cx, Y: y}, line)
			y -= z.line.FontExtents().Height
		}
	}
}

// edgePorts returns where each edge of g leaves its caller's box and
// enters its callee's: the edges leaving a box spread down its right
// side, those entering it down its left side, each in the order of the
// other end's height, so that arrows neither cross at a box nor meet in
// one point.
func edgePorts(g graphLayout, boxes []vg.Rectangle) (from, to []vg.Point) {
	from = make([]vg.Point, len(g.edges))
	to = make([]vg.Point, len(g.edges))
	centre := func(v int) vg.Point {
		return vg.Point{X: (boxes[v].Min.X + boxes[v].Max.X) / 2, Y: (boxes[v].Min.Y + boxes[v].Max.Y) / 2}
	}
	for v := range g.names {
		var out, in []int
		for k, e := range g.edges {
			if e[0] == v {
				out = append(out, k)
			}
			if e[1] == v {
				in = append(in, k)
			}
		}
		// Higher other ends first; a nearer one first on a tie.
		byOther := func(end int) func(a, b int) int {
			return func(a, b int) int {
				pa, pb := centre(g.edges[a][end]), centre(g.edges[b][end])
				if c := cmp.Compare(pb.Y, pa.Y); c != 0 {
					return c
				}
				return cmp.Compare(pa.X, pb.X)
			}
		}
		slices.SortStableFunc(out, byOther(1))
		slices.SortStableFunc(in, byOther(0))
		r := boxes[v]
		h := r.Max.Y - r.Min.Y
		for j, k := range out {
			from[k] = vg.Point{X: r.Max.X, Y: r.Max.Y - h*vg.Length(j+1)/vg.Length(len(out)+1)}
		}
		for j, k := range in {
			to[k] = vg.Point{X: r.Min.X, Y: r.Max.Y - h*vg.Length(j+1)/vg.Length(len(in)+1)}
		}
	}
	return from, to
}

// safeRatio returns x / top within [0, 1], 0 when top is not positive.
func safeRatio(x, top float64) float64 {
	if !(top > 0) {
		return 0
	}
	return min(max(x/top, 0), 1)
}

// shrink returns sty with its font k times its size.
func shrink(sty text.Style, k float64) text.Style {
	sty.Font.Size = vg.Length(float64(sty.Font.Size) * k)
	return sty
}

// routeEdge returns the points of the edge from node u, leaving its box
// at from, to node v, entering at to: of a straight line and curves
// bowed up or down (quadratic, by multiples of half slotH) that cross no
// other box and stay in area, the one that crosses the fewest of the
// edges routed before, the least bowed on a tie; false when none does,
// or the edge goes back or within a layer (it takes a lane).
func routeEdge(boxes []vg.Rectangle, u, v int, from, to vg.Point, slotH vg.Length, area vg.Rectangle, routed [][]vg.Point) ([]vg.Point, bool) {
	if boxes[v].Min.X <= boxes[u].Max.X {
		return nil, false
	}
	mid := vg.Point{X: (from.X + to.X) / 2, Y: (from.Y + to.Y) / 2}
	// Bow away from the middle of the area first.
	sign := 1.0
	if mid.Y < (area.Min.Y+area.Max.Y)/2 {
		sign = -1
	}
	const samples = 32
	var best []vg.Point
	bestCross := math.MaxInt
	for _, bow := range []float64{0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2} {
		bow *= sign
		pts := []vg.Point{from, to}
		if bow != 0 {
			pts = quadPoints(from, vg.Point{X: mid.X, Y: mid.Y + vg.Length(bow)*slotH}, to, samples)
		}
		if crossesBoxes(pts, boxes, u, v) || !inside(pts, area) {
			continue
		}
		n := 0
		for _, r := range routed {
			n += crossings(pts, r)
		}
		if n < bestCross {
			best, bestCross = pts, n
		}
		if n == 0 {
			break
		}
	}
	return best, best != nil
}

// laneSet is the lanes taken above and below the boxes of a panel.
type laneSet struct {
	above, below []lane
}

// lane is a stretch of a lane taken by an edge.
type lane struct {
	x0, x1 vg.Length
	y      vg.Length
}

// route returns the points of the edge from node u (leaving at from) to
// node v (entering at to) along a lane: up (or down) in the gap after
// u's box to a height clear of every box between, across, and down in
// the gap before v's box, corners rounded; a lane above when it has
// fewer edges side by side than below, each lane gap higher than the
// last one over the same stretch. An edge back or within a layer leaves
// and enters by the tops (or bottoms) of the boxes.
func (ls *laneSet) route(boxes []vg.Rectangle, u, v int, from, to vg.Point, area vg.Rectangle, gap, colGap vg.Length) []vg.Point {
	a, b := boxes[u], boxes[v]
	x0, x1 := min(a.Min.X, b.Min.X), max(a.Max.X, b.Max.X)
	top, bottom := max(a.Max.Y, b.Max.Y), min(a.Min.Y, b.Min.Y)
	for i, r := range boxes {
		if i != u && i != v && r.Max.X > x0 && r.Min.X < x1 {
			top, bottom = max(top, r.Max.Y), min(bottom, r.Min.Y)
		}
	}
	taken := func(lanes []lane) int {
		n := 0
		for _, l := range lanes {
			if l.x0 < x1 && x0 < l.x1 {
				n++
			}
		}
		return n
	}
	na, nb := taken(ls.above), taken(ls.below)
	up := na <= nb
	var y vg.Length
	if up {
		y = min(top+gap*(vg.Length(na)+0.6), area.Max.Y-gap/3)
		ls.above = append(ls.above, lane{x0: x0, x1: x1, y: y})
	} else {
		y = max(bottom-gap*(vg.Length(nb)+0.6), area.Min.Y+gap/3)
		ls.below = append(ls.below, lane{x0: x0, x1: x1, y: y})
	}
	d := max(colGap/4, gap/2)
	if b.Min.X <= a.Max.X {
		// Back, or within a layer: by the tops or the bottoms.
		side := func(r vg.Rectangle) vg.Point {
			if up {
				return vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: r.Max.Y}
			}
			return vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: r.Min.Y}
		}
		from, to = side(a), side(b)
		pts := quadPoints(from, vg.Point{X: from.X, Y: y}, vg.Point{X: from.X - d, Y: y}, 8)
		pts = append(pts, vg.Point{X: to.X + d, Y: y})
		return append(pts, quadPoints(vg.Point{X: to.X + d, Y: y}, vg.Point{X: to.X, Y: y}, to, 8)[1:]...)
	}
	pts := quadPoints(from, vg.Point{X: from.X + d, Y: from.Y}, vg.Point{X: from.X + d, Y: (from.Y + y) / 2}, 8)
	pts = append(pts, quadPoints(pts[len(pts)-1], vg.Point{X: from.X + d, Y: y}, vg.Point{X: from.X + 2*d, Y: y}, 8)[1:]...)
	pts = append(pts, vg.Point{X: to.X - 2*d, Y: y})
	pts = append(pts, quadPoints(vg.Point{X: to.X - 2*d, Y: y}, vg.Point{X: to.X - d, Y: y}, vg.Point{X: to.X - d, Y: (to.Y + y) / 2}, 8)[1:]...)
	return append(pts, quadPoints(pts[len(pts)-1], vg.Point{X: to.X - d, Y: to.Y}, to, 8)[1:]...)
}

// crossings returns how many times the lines through a and b cross
// (touching at an end, as edges at one port do, is not crossing).
func crossings(a, b []vg.Point) int {
	n := 0
	for i := 1; i < len(a); i++ {
		for j := 1; j < len(b); j++ {
			if segmentsCross(a[i-1], a[i], b[j-1], b[j]) {
				n++
			}
		}
	}
	return n
}

// segmentsCross reports whether segments pq and rs cross strictly inside
// both.
func segmentsCross(p, q, r, s vg.Point) bool {
	orient := func(a, b, c vg.Point) float64 {
		return float64((b.X-a.X)*(c.Y-a.Y) - (b.Y-a.Y)*(c.X-a.X))
	}
	d1, d2 := orient(r, s, p), orient(r, s, q)
	d3, d4 := orient(p, q, r), orient(p, q, s)
	return d1*d2 < 0 && d3*d4 < 0
}

// inside reports whether every point of pts is in r.
func inside(pts []vg.Point, r vg.Rectangle) bool {
	for _, p := range pts {
		if p.X < r.Min.X || p.X > r.Max.X || p.Y < r.Min.Y || p.Y > r.Max.Y {
			return false
		}
	}
	return true
}

// quadPoints returns k+1 points along the quadratic Bézier curve from p0
// through control point p1 to p2.
func quadPoints(p0, p1, p2 vg.Point, k int) []vg.Point {
	pts := make([]vg.Point, k+1)
	for i := range pts {
		t := vg.Length(i) / vg.Length(k)
		u := 1 - t
		pts[i] = vg.Point{
			X: u*u*p0.X + 2*u*t*p1.X + t*t*p2.X,
			Y: u*u*p0.Y + 2*u*t*p1.Y + t*t*p2.Y,
		}
	}
	return pts
}

// crossesBoxes reports whether the line through pts crosses a box other
// than those of nodes u and v.
func crossesBoxes(pts []vg.Point, boxes []vg.Rectangle, u, v int) bool {
	for i, b := range boxes {
		if i != u && i != v && crossesLine(pts, b) {
			return true
		}
	}
	return false
}

// segmentCrosses reports whether the segment from p to q meets r (found
// by sampling it at a tenth of r's smaller side).
func segmentCrosses(p, q vg.Point, r vg.Rectangle) bool {
	step := min(r.Max.X-r.Min.X, r.Max.Y-r.Min.Y) / 10
	d := vg.Length(math.Hypot(float64(q.X-p.X), float64(q.Y-p.Y)))
	k := 1
	if step > 0 {
		k = max(int(d/step), 1)
	}
	for i := 0; i <= k; i++ {
		t := vg.Length(i) / vg.Length(k)
		x, y := p.X+t*(q.X-p.X), p.Y+t*(q.Y-p.Y)
		if x >= r.Min.X && x <= r.Max.X && y >= r.Min.Y && y <= r.Max.Y {
			return true
		}
	}
	return false
}

// arrowHead returns the length of the head of an arrow of line width
// width.
func arrowHead(width vg.Length, th theme) vg.Length {
	return 2.5*width + 5*vg.Length(th.scale)
}

// drawArrow draws a line through pts of the given width with a filled
// arrowhead at its end.
func drawArrow(c draw.Canvas, pts []vg.Point, width vg.Length, th theme) {
	if len(pts) < 2 {
		return
	}
	end, prev := pts[len(pts)-1], pts[len(pts)-2]
	dx, dy := float64(end.X-prev.X), float64(end.Y-prev.Y)
	d := math.Hypot(dx, dy)
	if d == 0 {
		return
	}
	ux, uy := vg.Length(dx/d), vg.Length(dy/d)
	head := arrowHead(width, th)
	half := 0.5 * head
	base := vg.Point{X: end.X - head*ux, Y: end.Y - head*uy}
	// The line stops inside the head, so that its end does not show
	// past the point.
	line := slices.Clone(pts)
	line[len(line)-1] = vg.Point{X: end.X - 0.6*head*ux, Y: end.Y - 0.6*head*uy}
	c.StrokeLines(draw.LineStyle{Color: edgeColor, Width: width}, line)
	c.FillPolygon(edgeColor, []vg.Point{
		end,
		{X: base.X - half*uy, Y: base.Y + half*ux},
		{X: base.X + half*uy, Y: base.Y - half*ux},
	})
}

// labelRect returns the box of txt in sty at pt, with pad around it.
func labelRect(sty text.Style, txt string, pt vg.Point, pad vg.Length) vg.Rectangle {
	r := sty.Rectangle(txt)
	return vg.Rectangle{
		Min: vg.Point{X: pt.X + r.Min.X - pad, Y: pt.Y + r.Min.Y - pad/2},
		Max: vg.Point{X: pt.X + r.Max.X + pad, Y: pt.Y + r.Max.Y + pad/2},
	}
}

// placeLabel returns where along the line through pts the label txt
// goes: the place nearest its middle, from a fifth to four fifths of the
// way, where it overlaps none of taken, covers none of the other lines
// and stays in bounds, or, with none, the one where it does so least.
func placeLabel(sty text.Style, txt string, pts []vg.Point, taken []vg.Rectangle, others [][]vg.Point, bounds vg.Rectangle, pad vg.Length) vg.Point {
	best, bestAt := math.Inf(1), alongLine(pts, 0.5)
	for k := range 13 {
		// 0.5, 0.45, 0.55, 0.4, ...
		t := 0.5 + float64((k+1)/2)*0.05*float64(1-2*(k%2))
		at := alongLine(pts, t)
		r := labelRect(sty, txt, at, pad)
		area := float64((r.Max.X - r.Min.X) * (r.Max.Y - r.Min.Y))
		over := 0.0
		for _, o := range taken {
			over += overlap(r, o)
		}
		for _, line := range others {
			// A line under the label costs a tenth of the label.
			if crossesLine(line, r) {
				over += area / 10
			}
		}
		if !inside([]vg.Point{r.Min, r.Max}, bounds) {
			over += area
		}
		if over == 0 {
			return at
		}
		if over < best {
			best, bestAt = over, at
		}
	}
	return bestAt
}

// crossesLine reports whether the line through pts meets r.
func crossesLine(pts []vg.Point, r vg.Rectangle) bool {
	for j := 1; j < len(pts); j++ {
		if segmentCrosses(pts[j-1], pts[j], r) {
			return true
		}
	}
	return false
}

// alongLine returns the point a fraction t of the way along the line
// through pts.
func alongLine(pts []vg.Point, t float64) vg.Point {
	total := 0.0
	for i := 1; i < len(pts); i++ {
		total += math.Hypot(float64(pts[i].X-pts[i-1].X), float64(pts[i].Y-pts[i-1].Y))
	}
	want := t * total
	for i := 1; i < len(pts); i++ {
		d := math.Hypot(float64(pts[i].X-pts[i-1].X), float64(pts[i].Y-pts[i-1].Y))
		if want <= d && d > 0 {
			f := vg.Length(want / d)
			return vg.Point{X: pts[i-1].X + f*(pts[i].X-pts[i-1].X), Y: pts[i-1].Y + f*(pts[i].Y-pts[i-1].Y)}
		}
		want -= d
	}
	return pts[len(pts)-1]
}

// overlap returns the area where rectangles a and b overlap, 0 if none.
func overlap(a, b vg.Rectangle) float64 {
	w := min(a.Max.X, b.Max.X) - max(a.Min.X, b.Min.X)
	h := min(a.Max.Y, b.Max.Y) - max(a.Min.Y, b.Min.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return float64(w * h)
}

// roundedRect returns the outline of r with corners rounded by radius
// (less when r is small).
func roundedRect(r vg.Rectangle, radius vg.Length) vg.Path {
	radius = min(radius, (r.Max.X-r.Min.X)/2, (r.Max.Y-r.Min.Y)/2)
	var p vg.Path
	p.Move(vg.Point{X: r.Min.X + radius, Y: r.Min.Y})
	p.Line(vg.Point{X: r.Max.X - radius, Y: r.Min.Y})
	p.Arc(vg.Point{X: r.Max.X - radius, Y: r.Min.Y + radius}, radius, -math.Pi/2, math.Pi/2)
	p.Line(vg.Point{X: r.Max.X, Y: r.Max.Y - radius})
	p.Arc(vg.Point{X: r.Max.X - radius, Y: r.Max.Y - radius}, radius, 0, math.Pi/2)
	p.Line(vg.Point{X: r.Min.X + radius, Y: r.Max.Y})
	p.Arc(vg.Point{X: r.Min.X + radius, Y: r.Max.Y - radius}, radius, math.Pi/2, math.Pi/2)
	p.Line(vg.Point{X: r.Min.X, Y: r.Min.Y + radius})
	p.Arc(vg.Point{X: r.Min.X + radius, Y: r.Min.Y + radius}, radius, math.Pi, math.Pi/2)
	p.Close()
	return p
}
