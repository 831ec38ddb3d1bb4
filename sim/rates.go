package sim

import (
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/strategies"
)

// clientRates follows a fleet's AWS adaptive rate limiters for the time
// series (results.ClientRate): the senders whose limiter is on and the
// sum of their fill rates, kept up to date at each change.
type clientRates struct {
	throttle *strategies.Throttle // nil: no rate limiter to follow
	limited  int64
	sum      float64
}

func newClientRates(p *strategies.Policy) clientRates {
	if t := p.Throttle; t != nil && t.Kind == strategies.ThrottleAWSAdaptive {
		return clientRates{throttle: t}
	}
	return clientRates{}
}

// rate returns sender s's limiter's fill rate, and whether it is on.
func (c *clientRates) rate(s *strategies.Sender) (float64, bool) {
	return c.throttle.Rate(s.Throttle())
}

// changed counts a sender's limiter going from (r0, on0) to its state
// now.
func (c *clientRates) changed(s *strategies.Sender, r0 float64, on0 bool) {
	r1, on1 := c.rate(s)
	if on0 {
		c.limited--
		c.sum -= r0
	}
	if on1 {
		c.limited++
		c.sum += r1
	}
}

// sample returns the state at a bucket's end.
func (c *clientRates) sample() results.ClientRate {
	return results.ClientRate{Limited: c.limited, Rate: max(c.sum, 0)}
}
