package realhttp

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// CheckTimeScale checks a time scale (DriverOptions.TimeScale,
// ServerOptions.TimeScale) for the scenario sc: finite and
// above 0; such that the scenario's clock (wall time divided by the
// scale) holds a day of wall time (1e-300 overflows it at once); and
// such that every duration the scenario holds, scaled to the wall clock,
// still fits a time.Duration (1e300 overflows it) and is at least a
// nanosecond (not 0). Its error says what is wrong and the scale that
// would do, not the scale itself.
func CheckTimeScale(scale float64, sc *scenarios.Scenario) error {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return fmt.Errorf("want a finite number > 0")
	}
	// The scenario's clock is the wall time divided by the scale: a day
	// of it (a replay, a serve left running) must fit a duration.
	if !(float64(24*time.Hour)/scale < math.MaxInt64) {
		return fmt.Errorf("a day on the wall clock would be more scenario time than a duration holds (292 years), and the scenario's clock would overflow: want a scale of at least %.3g",
			float64(24*time.Hour)/math.MaxInt64)
	}
	var ds extremes
	ds.walk(reflect.ValueOf(sc).Elem(), "")
	if ds.longest > 0 && !(float64(ds.longest)*scale < math.MaxInt64) {
		return fmt.Errorf("%s (%s) would last longer on the wall clock than a duration holds (292 years): want a scale below %.3g",
			ds.longestAt, ds.longest, math.MaxInt64/float64(ds.longest))
	}
	if ds.shortest > 0 && float64(ds.shortest)*scale < 1 {
		return fmt.Errorf("%s (%s) would last %.3g ns on the wall clock, less than the clock's nanosecond: want a scale of at least %.3g",
			ds.shortestAt, ds.shortest, float64(ds.shortest)*scale, 1/float64(ds.shortest))
	}
	return nil
}

// extremes are the shortest and the longest positive durations of a
// scenario, and the fields that hold them.
type extremes struct {
	shortest, longest     time.Duration
	shortestAt, longestAt string
}

// walk notes every positive time.Duration in v's exported fields,
// elements and map values, recursively; path is v's field path, by the
// fields' YAML names.
func (e *extremes) walk(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Int64:
		if d := time.Duration(v.Int()); v.Type() == reflect.TypeFor[time.Duration]() && d > 0 {
			if e.shortest == 0 || d < e.shortest {
				e.shortest, e.shortestAt = d, path
			}
			if d > e.longest {
				e.longest, e.longestAt = d, path
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			e.walk(v.Elem(), path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			sub := path
			switch {
			case name == "" && f.Anonymous, name == "-":
			case name == "":
				sub = join(path, f.Name)
			default:
				sub = join(path, name)
			}
			e.walk(v.Field(i), sub)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			e.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			e.walk(it.Value(), fmt.Sprintf("%s.%v", path, it.Key()))
		}
	}
}

// join returns path.name, or name at the top.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
