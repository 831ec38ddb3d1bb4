package plots

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/plot"
)

func labels(ticks []plot.Tick) (out []string) {
	for _, t := range ticks {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

func TestTimeTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   []string
	}{
		{0, 900, []string{"0", "60", "120", "180", "240", "300", "360", "420", "480", "540", "600", "660", "720", "780", "840", "900"}},
		{0, 60, []string{"0", "5", "10", "15", "20", "25", "30", "35", "40", "45", "50", "55", "60"}},
		{0, 3600, []string{"0", "300", "600", "900", "1200", "1500", "1800", "2100", "2400", "2700", "3000", "3300", "3600"}},
		{0, 1.5, []string{"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1", "1.1", "1.2", "1.3", "1.4", "1.5"}},
	}
	for _, tt := range tests {
		got := timeTicks{labels: true}.Ticks(tt.lo, tt.hi)
		assert.Equal(t, tt.want, labels(got), "%v..%v", tt.lo, tt.hi)
		assert.Empty(t, labels(timeTicks{}.Ticks(tt.lo, tt.hi)), "unlabelled")
		assert.Len(t, timeTicks{}.Ticks(tt.lo, tt.hi), len(got), "the same ticks")
	}
}

func TestLogTicks(t *testing.T) {
	assert.Equal(t, []string{"0.001", "0.01", "0.1", "1", "10", "100", "1000"}, labels(logTicks{}.Ticks(0.001, 1000)))
	assert.Equal(t, []string{"10", "20", "50", "100", "200", "500", "1000"}, labels(logTicks{}.Ticks(10, 1000)), "2 and 5 over two decades")
	assert.Len(t, logTicks{}.Ticks(1, 10), 10, "minor ticks at 2..9")
	assert.Empty(t, logTicks{}.Ticks(0, 10), "no log ticks from 0")
}

func TestFractionTicks(t *testing.T) {
	assert.Equal(t, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}, labels(fractionTicks{}.Ticks(0, 1)))
	assert.Len(t, fractionTicks{}.Ticks(0, 1), 11)
}

func TestCountTicks(t *testing.T) {
	assert.Equal(t, []string{"0", "30,000", "60,000"}, labels(countTicks{}.Ticks(0, 60000)))
}

func TestLabels(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{decimal(0.001, 3), "0.001"},
		{decimal(8.4236, 3), "8.42"},
		{decimal(60, 3), "60"},
		{decimal(1500, 3), "1500"},
		{decimal(-0.0001, 2), "-0.0001"},
		{decimal(0, 3), "0"},
		{decimal(math.Copysign(0, -1), 3), "0"},
		{countLabel(50000), "50,000"},
		{countLabel(2056.4), "2,056"},
		{countLabel(999.4), "999"},
		{countLabel(999.6), "1,000"},
		{countLabel(12.26), "12.3"},
		{countLabel(1234567), "1,234,567"},
		{countLabel(-1500), "-1,500"},
		{secondsLabel(511, 0), "511 s"},
		{secondsLabel(24.46, 3.123), "24.5 s ± 3.1"},
		{ratioLabel(8.4236, 0), "8.42×"},
		{ratioLabel(7.5, 0.123), "7.5× ± 0.12"},
		{percent(0.3960), "39.6%"},
		{percent(1), "100%"},
	} {
		assert.Equal(t, tt.want, tt.got)
	}
}

func TestLogRange(t *testing.T) {
	for _, tt := range []struct{ lo, hi, a, b float64 }{
		{30, 541, 20, 1000},
		{0.0123, 0.9, 0.01, 1},
		{10, 10, 10, 20},
		{1e-6, 3e6, 1e-6, 5e6},
		{0, 5, 0.001, 1},
	} {
		a, b := logRange(tt.lo, tt.hi)
		assert.InDelta(t, tt.a, a, tt.a*1e-9, "%v..%v", tt.lo, tt.hi)
		assert.InDelta(t, tt.b, b, tt.b*1e-9, "%v..%v", tt.lo, tt.hi)
	}
}

func TestBreakName(t *testing.T) {
	sty := newTheme(1200, 800).tick
	w := sty.Width("decorrelated-")
	assert.Equal(t, []string{"decorrelated-", "jitter-10"}, breakName(sty, "decorrelated-jitter-10", w))
	assert.Equal(t, []string{"fixed-60s"}, breakName(sty, "fixed-60s", w))
	assert.Equal(t, []string{"averyveryverylongname"}, breakName(sty, "averyveryverylongname", w), "no hyphen: as it is")
}
