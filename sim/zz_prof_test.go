package sim

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"

	"github.com/zeontools/herdlab/scenarios"
)

func TestProfEngine(t *testing.T) {
	file := os.Getenv("PROF_FILE")
	if file == "" {
		t.Skip()
	}
	sc, err := scenarios.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("PROF_GRAPH") != "" {
		sc = oneService(sc)
	}
	f, _ := os.Create(os.Getenv("PROF_OUT"))
	pprof.StartCPUProfile(f)
	n := 3
	if os.Getenv("PROF_N") != "" {
		n = 20
	}
	for i := 0; i < n; i++ {
		for s := range sc.Strategies {
			if _, err := RunOne(context.Background(), sc, s, 0, nil, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	pprof.StopCPUProfile()
}
