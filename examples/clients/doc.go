// Package clients runs real Go retry libraries, unmodified, through
// herdtest: go-retryablehttp, cenkalti/backoff, failsafe-go, grpc-go's
// retry policy and a hand-written net/http loop, each in virtual time
// against the server of one scenario (testdata/outage.yaml: 1,000
// clients fail together against a server down for 30 s), beside
// herdlab's simulated strategies of the same shapes.
//
// Everything is in the tests: go test -v ./... shows each client's
// figures. The package is a module of its own, so that herdlab does not
// depend on the libraries it tests.
package clients
