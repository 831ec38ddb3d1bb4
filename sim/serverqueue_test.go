package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// queueScenario is a burst of requests at 0 s on one slot of constant
// 300 ms service, one attempt each, in buckets of 1 s: the queue drains
// by one every 300 ms, so its length over time is known exactly.
func queueScenario(t *testing.T, requests int, queue scenarios.Limit, horizon time.Duration) *scenarios.Scenario {
	t.Helper()
	sc := scenario(t, 1, 300*time.Millisecond)
	sc.Server.ServiceTime = scenarios.Dist{Kind: scenarios.Constant, Mean: 300 * time.Millisecond}
	sc.Server.Queue = queue
	sc.Workload.Requests = requests
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Burst}
	sc.Bucket = time.Second
	sc.Duration = horizon
	return sc
}

// queueColumns are a run's end-of-bucket queue, longest queue and mean
// queue per bucket.
func queueColumns(r *results.Run) (end, most []int64, mean []float64) {
	for _, b := range r.Series {
		end, most, mean = append(end, b.Queue), append(most, b.QueueMax), append(mean, b.QueueMean)
	}
	return end, most, mean
}

func TestQueueMaxAndMeanPerBucket(t *testing.T) {
	tests := []struct {
		name     string
		requests int
		queue    scenarios.Limit
		horizon  time.Duration
		end      []int64
		most     []int64
		mean     []float64
		rejected int64
	}{
		{
			// 4 waiting on [0, 0.3 s), 3, 2, then 1 from 0.9 s to 1.2 s.
			name: "drains across a bucket end", requests: 5, queue: scenarios.Unlimited, horizon: 3 * time.Second,
			end:  []int64{1, 0, 0},
			most: []int64{4, 1, 0},
			mean: []float64{4*0.3 + 3*0.3 + 2*0.3 + 1*0.1, 1 * 0.2, 0},
		},
		{
			// A full queue of 3, 6 rejected, empty again at 0.9 s: the end
			// of the bucket sees none of it.
			name: "fills and empties within a bucket", requests: 10, queue: 3, horizon: 2 * time.Second,
			end:      []int64{0, 0},
			most:     []int64{3, 0},
			mean:     []float64{3*0.3 + 2*0.3 + 1*0.3, 0},
			rejected: 6,
		},
		{
			// 9 waiting at 0, one fewer every 300 ms; the last bucket is
			// [2 s, 2.5 s): 3 until 2.1 s, 2 until 2.4 s, then 1, over 0.5 s.
			name: "last bucket cut short by the horizon", requests: 10, queue: scenarios.Unlimited, horizon: 2500 * time.Millisecond,
			end:  []int64{6, 3, 1},
			most: []int64{9, 6, 3},
			mean: []float64{9*0.3 + 8*0.3 + 7*0.3 + 6*0.1, 6*0.2 + 5*0.3 + 4*0.3 + 3*0.2, (3*0.1 + 2*0.3 + 1*0.1) / 0.5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := simulate(t, queueScenario(t, tt.requests, tt.queue, tt.horizon))
			r := res.Runs[0]
			assert.True(t, r.QueueTracked)
			assert.Equal(t, tt.rejected, r.Rejected)
			end, most, mean := queueColumns(r)
			assert.Equal(t, tt.end, end, "the queue at each bucket's end")
			assert.Equal(t, tt.most, most, "the longest queue in each bucket")
			require.Len(t, mean, len(tt.mean))
			for i := range mean {
				assert.InDelta(t, tt.mean[i], mean[i], 1e-9, "bucket %d: the time-weighted mean", i)
			}
		})
	}
}

func TestSummaryQueueLimitAndIndex(t *testing.T) {
	sc := queueScenario(t, 10, 3, 2*time.Second)
	second := sc.Strategies[0]
	second.Name = "second"
	sc.Strategies = append(sc.Strategies, second)
	res := simulate(t, sc)
	require.NotNil(t, res.Summary.QueueLimit)
	assert.Equal(t, int64(3), *res.Summary.QueueLimit)
	assert.Equal(t, []int{0, 1}, []int{res.Summary.Strategies[0].Index, res.Summary.Strategies[1].Index})

	// Only the second strategy: it keeps its place in the file.
	res, err := Run(t.Context(), sc, Options{Strategies: []string{"second"}})
	require.NoError(t, err)
	require.Len(t, res.Summary.Strategies, 1)
	assert.Equal(t, "second", res.Summary.Strategies[0].Name)
	assert.Equal(t, 1, res.Summary.Strategies[0].Index)

	sc.Server.Queue = scenarios.Unlimited
	assert.Nil(t, simulate(t, sc).Summary.QueueLimit, "an unlimited queue has no limit")
}
