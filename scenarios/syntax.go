package scenarios

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Where a YAML syntax error is placed. The parsers name the place where
// they noticed the mistake, which is often not the place to fix:
//
//   - An unclosed { or [: a flow mapping or list may span lines, so the
//     parsers notice only at the next line that cannot continue it
//     (yaml.v3 names the line before, go-yaml the line after). The fix is
//     a } or ] for the bracket that was opened: the error is placed on
//     that bracket.
//   - An over-indented line under `key: value`: both parsers read it as
//     the continuation of value (a plain scalar may span lines) and
//     stumble on its colon; go-yaml names the end of the line above. The
//     line to fix is the indented one: the error is placed at its first
//     character.
//   - An under-indented line: go-yaml names it; the message says which
//     indentations would be valid.
//   - A stray ] or }, a key without a colon, a tab in the indentation, an
//     unclosed quote: go-yaml's position is the character to fix; the
//     message says what to do.

// syntaxFix rewrites e, go-yaml's reading of a syntax error of data
// (line and column of the token where it stopped), into the place and
// words of the fix; v3line is the line yaml.v3 named (0 if none).
func syntaxFix(e *Error, data []byte, v3line int) {
	lines := strings.Split(string(data), "\n")
	text := func(line int) string {
		if line < 1 || line > len(lines) {
			return ""
		}
		return strings.TrimRight(lines[line-1], "\r")
	}
	at := func(line, col int) byte {
		t := text(line)
		if col < 1 || col > len(t) {
			return 0
		}
		return t[col-1]
	}
	msg := strings.TrimPrefix(e.Msg, "not valid YAML: ")
	switch {
	case unclosedFlow.MatchString(msg):
		if o, ok := lastUnclosed(lines, e.Line); ok {
			closer := map[byte]string{'{': "}", '[': "]"}[o.char]
			what := map[byte]string{'{': "mapping", '[': "list"}[o.char]
			if o.wrongLine > 0 {
				e.Line, e.Col = o.wrongLine, o.wrongCol
				e.Msg = fmt.Sprintf("not valid YAML: this %c does not close the %c of line %d, column %d: write %s", at(e.Line, e.Col), o.char, o.line, o.col, closer)
				return
			}
			e.Line, e.Col = o.line, o.col
			e.Msg = fmt.Sprintf("not valid YAML: this %c is never closed: end the %s with %s", o.char, what, closer)
			return
		}
	case msg == "mapping value is not allowed in this context" && v3line > e.Line:
		// go-yaml names the end of the line above the over-indented one.
		prev := prevContent(lines, v3line)
		if p := strings.TrimLeft(text(prev), " "); prev > 0 && len(p) > 1 && p[0] == '-' && p[1] != ' ' && p[1] != '-' {
			// -name: a is a key "-name", not a list item.
			e.Line, e.Col = prev, indentOf(text(prev))+1
			e.Msg = fmt.Sprintf("not valid YAML: a list item needs a space after its -: write - %s", p[1:])
			return
		}
		if prev > 0 && indentOf(text(v3line)) > indentOf(text(prev)) && hasValue(text(prev)) {
			// The key's column, after any "- " of list items.
			keyAt := indentOf(text(prev))
			for strings.HasPrefix(text(prev)[keyAt:], "- ") {
				keyAt += 2 + indentOf(text(prev)[keyAt+2:])
			}
			key, _, _ := strings.Cut(text(prev)[keyAt:], ":")
			e.Line, e.Col = v3line, indentOf(text(v3line))+1
			e.Msg = fmt.Sprintf("not valid YAML: this line is indented more than line %d, whose %s already has a value: "+
				"indent it as much as %s (%s) to make it a field beside it, or nest it under a key without a value",
				prev, key, key, spaces(keyAt))
			return
		}
	case at(e.Line, e.Col) == ']' || at(e.Line, e.Col) == '}':
		if o, ok := lastUnclosed(lines, e.Line); !ok || o.line < e.Line && o.char != map[byte]byte{']': '[', '}': '{'}[at(e.Line, e.Col)] {
			c := at(e.Line, e.Col)
			e.Msg = fmt.Sprintf("not valid YAML: this %c closes nothing: remove it, or open the %s it ends with %c",
				c, map[byte]string{']': "list", '}': "mapping"}[c], map[byte]byte{']': '[', '}': '{'}[c])
			return
		}
	case msg == "value is not allowed in this context" && e.Col == indentOf(text(e.Line))+1 && e.Col > 1:
		if valid := enclosingIndents(lines, e.Line); len(valid) > 0 {
			var ways []string
			for _, v := range valid {
				ways = append(ways, fmt.Sprintf("%s (as line %d)", spaces(v.indent), v.line))
			}
			e.Msg = fmt.Sprintf("not valid YAML: this line is indented by %s, as no block above it is: indent it by %s",
				spaces(e.Col-1), orList(ways))
			return
		}
	case msg == "unexpected key name" || msg == "non-map value is specified":
		t := strings.TrimSpace(text(e.Line))
		word, rest, _ := strings.Cut(t, " ")
		if t != "" && !strings.Contains(word, ":") && e.Col == indentOf(text(e.Line))+1 {
			e.Msg = strings.TrimSpace(fmt.Sprintf("not valid YAML: %s has no colon after its key: write %s: %s", t, word, strings.TrimSpace(rest)))
			return
		}
	case strings.HasPrefix(msg, `found character '\t'`):
		e.Msg += ": YAML indents with spaces, never tabs"
	case strings.HasPrefix(msg, "could not find end character of"):
		q := at(e.Line, e.Col)
		if q == '"' || q == '\'' {
			e.Msg = fmt.Sprintf("not valid YAML: this %c is never closed: end the string with %c", q, q)
		}
	}
}

// unclosedFlow matches the parsers' messages for a flow mapping or list
// left open.
var unclosedFlow = regexp.MustCompile(`must be specified$|could not find flow (mapping|sequence) end token|did not find expected ',' or`)

// opener is a { or [ in a file; wrongLine and wrongCol, when not 0,
// are where a ] or } that does not match it is.
type opener struct {
	char                byte
	line, col           int
	wrongLine, wrongCol int
}

// lastUnclosed returns the innermost { or [ of the lines up to line
// (included) that no } or ] closes, or the first closed by the wrong
// bracket, skipping quoted strings, comments and block scalars (| and
// >); false if every one is closed.
func lastUnclosed(lines []string, line int) (opener, bool) {
	var stack []opener
	block := -1 // the indentation of a block scalar's key, -1 outside one
	for i := 0; i < len(lines) && i < line; i++ {
		l := strings.TrimRight(lines[i], "\r")
		if block >= 0 {
			if strings.TrimSpace(l) == "" || indentOf(l) > block {
				continue
			}
			block = -1
		}
		var quote byte
		last := byte(' ') // the last character outside spaces, ' ' at the start of the line
		for j := 0; j < len(l); j++ {
			c := l[j]
			switch {
			case quote != 0:
				if c == quote {
					if quote == '\'' && j+1 < len(l) && l[j+1] == '\'' {
						j++ // '' is a quote inside '...'
						continue
					}
					quote = 0
				} else if c == '\\' && quote == '"' {
					j++
				}
				continue
			case c == '#' && (j == 0 || l[j-1] == ' ' || l[j-1] == '\t'):
				j = len(l)
				continue
			case (c == '"' || c == '\'') && strings.IndexByte(" :-[{,", last) >= 0:
				quote = c
			case c == '{' || c == '[':
				stack = append(stack, opener{char: c, line: i + 1, col: j + 1})
			case (c == '}' || c == ']') && len(stack) > 0:
				top := stack[len(stack)-1]
				if c != map[byte]byte{'{': '}', '[': ']'}[top.char] {
					top.wrongLine, top.wrongCol = i+1, j+1
					return top, true
				}
				stack = stack[:len(stack)-1]
			}
			if c != ' ' && c != '\t' {
				last = c
			}
		}
		if len(stack) == 0 && blockScalar.MatchString(l) {
			block = indentOf(l)
		}
	}
	if len(stack) == 0 {
		return opener{}, false
	}
	return stack[len(stack)-1], true
}

// blockScalar matches a line that starts a block scalar: `key: |` or
// `key: >-` and the like.
var blockScalar = regexp.MustCompile(`:\s+[|>][-+0-9]*\s*(#.*)?$`)

// indentOf returns the number of spaces that start l.
func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// prevContent returns the number of the last line before line that holds
// more than blanks or a comment, 0 if none.
func prevContent(lines []string, line int) int {
	for i := line - 1; i >= 1 && i <= len(lines); i-- {
		t := strings.TrimSpace(lines[i-1])
		if t != "" && !strings.HasPrefix(t, "#") {
			return i
		}
	}
	return 0
}

// hasValue reports whether the line `key: value` gives its key a value
// on the line (not a nested block).
func hasValue(l string) bool {
	_, v, ok := strings.Cut(l, ": ")
	v = strings.TrimSpace(v)
	return ok && v != "" && !strings.HasPrefix(v, "#") && !strings.HasPrefix(v, "&")
}

// indent is an indentation that a line may take, and a line above that
// has it.
type indent struct{ indent, line int }

// enclosingIndents returns the indentations that a line at line may take:
// those of the line above and of each block enclosing it, deepest first.
func enclosingIndents(lines []string, line int) []indent {
	var out []indent
	for i := prevContent(lines, line); i > 0; i = prevContent(lines, i) {
		n := indentOf(lines[i-1])
		if len(out) == 0 || n < out[len(out)-1].indent {
			out = append(out, indent{n, i})
		}
		if n == 0 {
			break
		}
	}
	return out
}

// spaces returns "1 space" or "N spaces".
func spaces(n int) string {
	if n == 1 {
		return "1 space"
	}
	return fmt.Sprintf("%d spaces", n)
}

// orList returns "a", "a or b", or "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// firstColumn returns the column of the first non-blank character of
// line in data, 1 if there is none.
func firstColumn(data []byte, line int) int {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return 1
	}
	l := lines[line-1]
	return len(l) - len(bytes.TrimLeft(l, " \t")) + 1
}
