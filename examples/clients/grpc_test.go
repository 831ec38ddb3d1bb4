package clients

import (
	"context"

	"github.com/zeontools/herdlab/herdtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
)

// grpcServiceConfig is a gRPC retry policy (gRFC A6): up to 5 attempts
// (gRPC's own cap), the n-th retry after a wait drawn uniformly from
// [0, min(maxBackoff, initialBackoff * backoffMultiplier^(n-1))), on
// UNAVAILABLE, which is what herdtest answers for a 503.
const grpcServiceConfig = `{"methodConfig": [{
	"name": [{"service": "herdlab.Work"}],
	"retryPolicy": {
		"maxAttempts": 5,
		"initialBackoff": "1s",
		"maxBackoff": "30s",
		"backoffMultiplier": 2,
		"retryableStatusCodes": ["UNAVAILABLE"]
	}
}]}`

// grpcRetry is grpc-go with that retry policy, calling a method of no
// generated code: herdtest answers any method with an empty message
// (which decodes as any message, emptypb.Empty here) or a status. gRPC's
// retries are inside Invoke: herdtest counts each one that reaches the
// server as an attempt, and while the server refuses connections, each
// of the channel's connection attempts.
//
// While its connections are refused the channel is in
// TRANSIENT_FAILURE: a call fails at the client with the last
// connection error, and its retries fail the same way, without a
// request on the wire. What the server sees then are the channel's
// dials, on gRPC's connection backoff (1 s, then times 1.6 with +-20%
// jitter, the first without: the whole fleet dials again at 1 s), which
// go on after the call has given up.
func grpcRetry(n herdtest.Net) (herdtest.Send, error) {
	return grpcClient(n)
}

// grpcWaitForReady is grpcRetry with each call waiting for the channel
// to be ready (grpc.WaitForReady): a call outlives the refused
// connections, and the fleet comes back when its channels reconnect,
// spread only by the connection backoff's +-20% jitter.
func grpcWaitForReady(n herdtest.Net) (herdtest.Send, error) {
	return grpcClient(n, grpc.WaitForReady(true))
}

// grpcClient is a gRPC channel to the scenario's server with the retry
// policy of grpcServiceConfig, and its calls with opts.
func grpcClient(n herdtest.Net, opts ...grpc.CallOption) (herdtest.Send, error) {
	conn, err := grpc.NewClient("passthrough:///"+n.Addr,
		grpc.WithContextDialer(n.Dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(grpcServiceConfig))
	if err != nil {
		return nil, err
	}
	n.Cleanup(func() { _ = conn.Close() })
	return func(ctx context.Context, r herdtest.Request) error {
		return conn.Invoke(ctx, "/herdlab.Work/Do", &emptypb.Empty{}, &emptypb.Empty{}, opts...)
	}, nil
}
