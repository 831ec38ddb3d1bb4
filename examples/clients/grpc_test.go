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
// retries are inside Invoke: herdtest sees each as an attempt at the
// server, or as a refused connection while the server is down.
func grpcRetry(n herdtest.Net) (herdtest.Send, error) {
	conn, err := grpc.NewClient("passthrough:///"+n.Addr,
		grpc.WithContextDialer(n.Dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(grpcServiceConfig))
	if err != nil {
		return nil, err
	}
	n.Cleanup(func() { _ = conn.Close() })
	return func(ctx context.Context, r herdtest.Request) error {
		return conn.Invoke(ctx, "/herdlab.Work/Do", &emptypb.Empty{}, &emptypb.Empty{})
	}, nil
}
