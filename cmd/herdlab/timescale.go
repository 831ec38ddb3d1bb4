package main

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// checkTimeScale checks a --time-scale for the scenario sc: finite and
// above 0; such that the scenario's clock (wall time divided by the
// scale) holds a day of wall time (1e-300 overflows it at once); and
// such that every duration the scenario holds, scaled to the wall clock,
// still fits a time.Duration (1e300 overflows it) and is at least a
// nanosecond (not 0).
func checkTimeScale(scale float64, sc *scenarios.Scenario) error {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return fmt.Errorf("--time-scale %v: want a finite number > 0", scale)
	}
	// The scenario's clock is the wall time divided by the scale: a day
	// of it (a replay, a serve left running) must fit a duration.
	if !(float64(24*time.Hour)/scale < math.MaxInt64) {
		return fmt.Errorf("--time-scale %v: a day on the wall clock would be more scenario time than a duration holds (292 years), and the scenario's clock would overflow: want a scale of at least %.3g",
			scale, float64(24*time.Hour)/math.MaxInt64)
	}
	shortest, longest := durations(reflect.ValueOf(sc).Elem())
	if longest > 0 && !(float64(longest)*scale < math.MaxInt64) {
		return fmt.Errorf("--time-scale %v: %s of the scenario would last longer on the wall clock than a duration holds (292 years): want a scale below %.3g",
			scale, longest, math.MaxInt64/float64(longest))
	}
	if shortest > 0 && float64(shortest)*scale < 1 {
		return fmt.Errorf("--time-scale %v: %s of the scenario would last %.3g ns on the wall clock, less than the clock's nanosecond: want a scale of at least %.3g",
			scale, shortest, float64(shortest)*scale, 1/float64(shortest))
	}
	return nil
}

// durations returns the shortest and the longest positive time.Duration
// in v's exported fields, elements and map values, recursively (0 when
// there is none).
func durations(v reflect.Value) (shortest, longest time.Duration) {
	note := func(s, l time.Duration) {
		if s > 0 && (shortest == 0 || s < shortest) {
			shortest = s
		}
		longest = max(longest, l)
	}
	switch v.Kind() {
	case reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			d := time.Duration(v.Int())
			note(max(d, 0), d)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			note(durations(v.Elem()))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				note(durations(v.Field(i)))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			note(durations(v.Index(i)))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			note(durations(it.Value()))
		}
	}
	return shortest, longest
}
