package sim

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// parsing lists where the Go files src (name -> text) read a scenario's
// word as the engines must not: a call of a strategies.Parse* function
// (but strategies.ParseRetryAfter, which reads a response's header, not
// a scenario), or a look at a service's QueueDiscipline (the engines read
// Service.Discipline). Validation reads the words, once
// (scenarios.Scenario.Validate); the engines read typed values.
func parsing(t *testing.T, src map[string]string) []string {
	t.Helper()
	var found []string
	fset := token.NewFileSet()
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range src {
			if !yield(name) {
				return
			}
		}
	}) {
		f, err := parser.ParseFile(fset, name, src[name], parser.SkipObjectResolution)
		require.NoError(t, err)
		pkg := "" // the file's name for package strategies
		for _, im := range f.Imports {
			if path, _ := strconv.Unquote(im.Path.Value); path == "github.com/zeontools/herdlab/strategies" {
				pkg = "strategies"
				if im.Name != nil {
					pkg = im.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, _ := sel.X.(*ast.Ident)
			switch {
			case x != nil && pkg != "" && x.Name == pkg && strings.HasPrefix(sel.Sel.Name, "Parse") && sel.Sel.Name != "ParseRetryAfter":
			case sel.Sel.Name == "QueueDiscipline":
			default:
				return true
			}
			found = append(found, fmt.Sprintf("%s: %s", fset.Position(sel.Pos()), sel.Sel.Name))
			return true
		})
	}
	return found
}

// engineSources returns the non-test Go files of the engines' packages,
// sim and realhttp.
func engineSources(t *testing.T) map[string]string {
	t.Helper()
	src := map[string]string{}
	for _, dir := range []string{".", "../realhttp"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			src[file] = string(b)
		}
	}
	return src
}

func TestTheEnginesNeverParseAScenariosWords(t *testing.T) {
	src := engineSources(t)
	require.Greater(t, len(src), 20, "the engines' files are read")
	assert.Empty(t, parsing(t, src), "validation reads a scenario's words, once: read the typed values (Strategy.Policy, RateLimit.HintFormat, Service.Discipline)")

	// The check finds what it looks for, under any import name.
	found := parsing(t, map[string]string{
		"a.go": `package sim
import st "github.com/zeontools/herdlab/strategies"
func f(rl, svc x) { st.ParseRetryAfterFormat(rl.Format); _ = svc.QueueDiscipline; st.ParseRetryAfter("1", t) }`,
		"b.go": `package sim
import "github.com/zeontools/herdlab/strategies"
func g() { strategies.ParseBudgetKind("tokens") }`,
	})
	assert.Equal(t, []string{"a.go:3:21: ParseRetryAfterFormat", "a.go:3:62: QueueDiscipline", "b.go:3:12: ParseBudgetKind"}, found)
}

// TestAScenarioChangedAfterValidationRunsAsChanged runs a loaded
// scenario, changes a strategy's policy, and runs it again without
// validating it: the run follows the change (the policy Validate made is
// not used once its strategy has changed), and validating again gives
// the same run.
func TestAScenarioChangedAfterValidationRunsAsChanged(t *testing.T) {
	ctx := context.Background()
	load := func() *scenarios.Scenario {
		sc, err := scenarios.Load("../scenarios/thundering-herd.yaml")
		require.NoError(t, err)
		sc.Runs = 1
		sc.Strategies, sc.Checks = sc.Strategies[:1], nil
		require.NoError(t, sc.Validate())
		return sc
	}
	sc := load()
	before, err := Run(ctx, sc, Options{})
	require.NoError(t, err)
	require.Greater(t, before.Runs[0].Attempts, before.Runs[0].Requests, "retries are made")

	sc.Strategies[0].MaxAttempts = 1 // no retry
	once, err := Run(ctx, sc, Options{})
	require.NoError(t, err)
	assert.LessOrEqual(t, once.Runs[0].Attempts, once.Runs[0].Requests, "no retry once max_attempts is 1")

	require.NoError(t, sc.Validate())
	again, err := Run(ctx, sc, Options{})
	require.NoError(t, err)
	assert.Equal(t, once.Summary.Strategies[0].Figures, again.Summary.Strategies[0].Figures, "validated again, the same run")

}

// TestRunsInParallelShareTheirPolicies: the runs of a strategy share the
// one policy Validate made (a hedge's percentile estimate, a shared
// budget's groups, a breaker's state are each run's senders'), and give
// the same outputs one at a time and in parallel (run with -race, the
// detector finds no write to what they share).
func TestRunsInParallelShareTheirPolicies(t *testing.T) {
	sc, err := scenarios.Load("../scenarios/testdata/valid/everything-policies.yaml")
	require.NoError(t, err)
	sc.Runs, sc.Workload.Requests, sc.Sweep = 3, 1000, nil
	require.NoError(t, sc.Validate())
	made := make([]*strategies.Policy, len(sc.Strategies))
	for i := range sc.Strategies {
		made[i] = sc.Strategies[i].Policy()
	}
	var want [2][]byte
	for i, parallel := range []int{1, 2} {
		res, err := Run(context.Background(), sc, Options{Parallel: parallel})
		require.NoError(t, err)
		js, ts := outputs(t, sc, res)
		if i == 0 {
			want = [2][]byte{js, ts}
			continue
		}
		assert.Equal(t, string(want[0]), string(js), "summary.json in parallel")
		assert.Equal(t, string(want[1]), string(ts), "timeseries.csv in parallel")
	}
	for i := range sc.Strategies {
		assert.Same(t, made[i], sc.Strategies[i].Policy(), sc.Strategies[i].Name)
	}
}
