package checks

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Report is the outcome of checking one scenario.
type Report struct {
	File     string `json:"file"`
	Scenario string `json:"scenario"`
	Runs     int    `json:"runs"`
	// Only names the strategies run when not all were (check
	// --strategy), in the scenario's order; empty when all were.
	Only   []string  `json:"only,omitempty"`
	Checks []Result  `json:"checks"`
	Lint   []Finding `json:"lint"`
	// Strict makes lint findings that are not silenced fail the report.
	Strict bool `json:"strict"`
}

// Finding is a lint finding as a report shows it.
type Finding struct {
	Rule string `json:"rule"`
	Name string `json:"name"`
	// File is set when the finding is in another file than the
	// scenario: a configuration file that a from: reads.
	File     string `json:"file,omitempty"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Message  string `json:"message"`
	Silenced string `json:"silenced,omitempty"`
	// Error marks a finding of a rule that finds errors (HL009): it fails
	// the report, strict or not. It cannot be silenced.
	Error bool `json:"error,omitempty"`
}

// fails reports whether the finding fails a report that is strict or
// not.
func (f Finding) fails(strict bool) bool {
	return f.Error || (strict && f.Silenced == "")
}

// in returns the file the finding is in: its own, or the scenario's.
func (f Finding) in(scenario string) string {
	if f.File != "" {
		return f.File
	}
	return scenario
}

// Failed counts the failed checks, and the lint findings that fail
// (errors, and when strict those not silenced). Skipped checks do not
// fail.
func (r *Report) Failed() int {
	n := failedChecks(r)
	for _, f := range r.Lint {
		if f.fails(r.Strict) {
			n++
		}
	}
	return n
}

// WriteText writes the reports as a table per scenario: one row per
// check, then the lint findings.
func WriteText(w io.Writer, reports []*Report) error {
	for _, r := range reports {
		only := ""
		if len(r.Only) > 0 {
			only = ", only " + strings.Join(r.Only, ", ")
		}
		fmt.Fprintf(w, "%s (%s, %d run(s)%s)\n", r.Scenario, r.File, r.Runs, only)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		if len(r.Checks) > 0 {
			fmt.Fprintln(tw, "  strategy\tfigure\tbound\tvalue\tresult\t")
		} else {
			fmt.Fprintln(tw, "  no checks")
		}
		for _, c := range r.Checks {
			result := c.Status()
			if c.Note != "" {
				result += ": " + c.Note
			}
			strategy := c.Strategy
			if strategy == "" {
				strategy = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", strategy, c.Figure, c.Bound, c.Text, result)
		}
		tw.Flush()
		for _, f := range r.Lint {
			if f.Silenced != "" {
				fmt.Fprintf(w, "  %s:%d:%d: %s: %s %s silenced: %s\n", f.in(r.File), f.Line, f.Col, f.Path, f.Rule, f.Name, f.Silenced)
				continue
			}
			level := "warning"
			if f.fails(r.Strict) {
				level = "error"
			}
			fmt.Fprintf(w, "  %s:%d:%d: %s: %s %s: %s (%s)\n", f.in(r.File), f.Line, f.Col, f.Path, f.Rule, f.Name, f.Message, level)
		}
		fmt.Fprintf(w, "  %s\n\n", Tally(r.Passed(), r.Failed(), r.Skipped()))
	}
	return nil
}

// Tally says how many checks passed, failed and were skipped: "3 passed,
// 1 failed", and ", 2 skipped" when some were.
func Tally(passed, failed, skipped int) string {
	s := fmt.Sprintf("%d passed, %d failed", passed, failed)
	if skipped > 0 {
		s += fmt.Sprintf(", %d skipped", skipped)
	}
	return s
}

// Passed counts the checks that passed.
func (r *Report) Passed() int { return countChecks(r, func(c Result) bool { return c.Pass }) }

// Skipped counts the checks that were skipped: on strategies not run.
func (r *Report) Skipped() int { return countChecks(r, func(c Result) bool { return c.Skipped }) }

func failedChecks(r *Report) int { return countChecks(r, Result.Failed) }

func countChecks(r *Report, is func(Result) bool) int {
	n := 0
	for _, c := range r.Checks {
		if is(c) {
			n++
		}
	}
	return n
}

// WriteJSON writes the reports as one JSON document: the counts of
// checks passed, failed (lint findings that fail included) and skipped,
// then each report. Figures are JSON numbers (null where one does not
// exist), bounds plain text, not HTML-escaped.
func WriteJSON(w io.Writer, reports []*Report) error {
	passed, failed, skipped := 0, 0, 0
	for _, r := range reports {
		passed += r.Passed()
		failed += r.Failed()
		skipped += r.Skipped()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Passed    int       `json:"passed"`
		Failed    int       `json:"failed"`
		Skipped   int       `json:"skipped"`
		Scenarios []*Report `json:"scenarios"`
	}{passed, failed, skipped, reports})
}

// The JUnit XML format that CI systems read: a suite per scenario, a case
// per check and per lint finding. Skipped means what it means in the
// other formats: a check that was not judged (its strategy did not run,
// or its scenario has no baseline). A lint finding either fails the
// report or passes with its warning in system-out: it is never skipped,
// so that every format counts the same skipped checks.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
		Skipped   *junitFailure `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes the reports as JUnit XML.
func WriteJUnit(w io.Writer, reports []*Report) error {
	var all junitSuites
	for _, r := range reports {
		suite := junitSuite{Name: r.Scenario}
		for _, c := range r.Checks {
			name := strings.TrimSpace(c.Strategy + " " + c.Figure + " " + c.Bound)
			tc := junitCase{Name: name, Classname: r.Scenario}
			msg := "value " + c.Text
			if c.Note != "" {
				msg += ": " + c.Note
			}
			switch {
			case c.Skipped:
				tc.Skipped = &junitFailure{Message: "skipped: " + c.Note}
				suite.Skipped++
			case !c.Pass:
				tc.Failure = &junitFailure{Message: msg, Text: fmt.Sprintf("%s:%d:%d: %s\n%s", r.File, c.Line, c.Col, msg, c.Why)}
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, tc)
		}
		for _, f := range r.Lint {
			tc := junitCase{Name: "lint " + f.Rule + " " + f.Path, Classname: r.Scenario}
			text := fmt.Sprintf("%s:%d:%d: %s", f.in(r.File), f.Line, f.Col, f.Message)
			switch {
			case f.fails(r.Strict):
				tc.Failure = &junitFailure{Message: f.Name + ": " + f.Message, Text: text}
				suite.Failures++
			case f.Silenced != "":
				tc.SystemOut = text + "\nsilenced: " + f.Silenced
			default:
				tc.SystemOut = "warning: " + f.Name + ": " + text
			}
			suite.Cases = append(suite.Cases, tc)
		}
		suite.Tests = len(suite.Cases)
		all.Tests += suite.Tests
		all.Failures += suite.Failures
		all.Skipped += suite.Skipped
		all.Suites = append(all.Suites, suite)
	}
	io.WriteString(w, xml.Header)
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
