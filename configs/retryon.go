//go:build !js

package configs

// Envoy's retry conditions, read by the Envoy reader and by the Istio
// reader (a VirtualService's retryOn is Envoy's retry_on).

// envoyRetryOn maps Envoy's retry_on conditions (router filter,
// x-envoy-retry-on and x-envoy-retry-grpc-on; retry_state_impl.cc
// wouldRetryFromHeaders and wouldRetryFromReset) to the herdlab outcomes
// they retry. herdlab's server answers 503 for overload and outage and
// 429 for its rate limit (in its gRPC mode, UNAVAILABLE and
// RESOURCE_EXHAUSTED); refused is a connection refused, reset a
// connection reset, timeout the attempt's (per-try) timeout.
//
//   - 5xx and gateway-error retry 5xx answers (herdlab's are 503s, a
//     gateway error) and every stream reset: connect failures, resets,
//     and the per-try timeout, which router.cc turns into a local reset
//     (onPerTryTimeoutCommon: maybeRetryReset(LocalReset, ...)).
//   - reset retries any reset: connect failures, resets, per-try timeouts.
//   - reset-before-request retries a reset before the request was sent:
//     a connect failure (a per-try timeout comes after the request).
//   - connect-failure retries connection failures only.
//   - retriable-status-codes retries the codes of retriable_status_codes:
//     see envoyStatusCodes.
//   - unavailable and resource-exhausted (gRPC status in the response
//     headers) retry herdlab's 503 and 429 as its gRPC mode answers them.
//
// Conditions herdlab never meets are left out: refused-stream (an HTTP/2
// REFUSED_STREAM), envoy-ratelimited (the x-envoy-ratelimited header),
// retriable-4xx (409 only; herdlab's server never answers 409, and
// herdlab's 4xx is every 4xx but 429), retriable-headers,
// http3-post-connect-failure, and the gRPC cancelled, deadline-exceeded
// (a server's status, not the per-try timeout) and internal. A token
// Envoy does not know is ignored, as Envoy ignores it
// (retry_policy_impl.cc keeps parseRetryOn(...).first).
var envoyRetryOn = map[string][]string{
	"5xx":                        {"refused", "timeout", "reset", "5xx"},
	"gateway-error":              {"refused", "timeout", "reset", "5xx"},
	"reset":                      {"refused", "timeout", "reset"},
	"reset-before-request":       {"refused"},
	"connect-failure":            {"refused"},
	"retriable-status-codes":     nil, // envoyStatusCodes
	"unavailable":                {"5xx"},
	"resource-exhausted":         {"429"},
	"refused-stream":             nil,
	"envoy-ratelimited":          nil,
	"retriable-4xx":              nil,
	"retriable-headers":          nil,
	"http3-post-connect-failure": nil,
	"cancelled":                  nil,
	"deadline-exceeded":          nil,
	"internal":                   nil,
}

// envoyStatusCodes maps retriable_status_codes: 503 (the code herdlab's
// server answers for overload) to 5xx, 429 to 429, any other 4xx to 4xx;
// other codes herdlab's server never answers and are left out.
func envoyStatusCodes(codes []uint32) []string {
	var out []string
	for _, c := range codes {
		switch {
		case c == 503:
			out = append(out, "5xx")
		case c == 429:
			out = append(out, "429")
		case c >= 400 && c < 500:
			out = append(out, "4xx")
		}
	}
	return out
}

// herdlabOutcomes is the order retry_on is written in.
var herdlabOutcomes = []string{"refused", "timeout", "reset", "5xx", "429", "4xx"}

// ordered lists the outcomes in set in herdlab's order; nil for none.
func ordered(set map[string]bool) []string {
	var out []string
	for _, o := range herdlabOutcomes {
		if set[o] {
			out = append(out, o)
		}
	}
	return out
}
