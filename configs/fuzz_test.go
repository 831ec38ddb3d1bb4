//go:build !js

package configs

import (
	"errors"
	"os"
	"testing"
)

// fuzzReader checks that a reader, on any bytes, returns policies or
// problems placed in the file, and never panics.
func fuzzReader(f *testing.F, format string, seeds ...string) {
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := Import(format, "f", data)
		if err != nil {
			var list []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				list = j.Unwrap()
			} else {
				list = []error{err}
			}
			for _, e := range list {
				var ce *Error
				if !errors.As(e, &ce) || ce.Pos.Line < 1 || ce.Pos.Col < 1 {
					t.Fatalf("a problem not placed in the file: %v", e)
				}
			}
			return
		}
		for _, p := range fr.Policies {
			got, err := Read(Ref{Format: format, File: "f", Name: p.Name}, data)
			if err != nil {
				t.Fatalf("Import reads %q, Read refuses it: %v", p.Name, err)
			}
			if len(got.Values) != len(p.Values) {
				t.Fatalf("Read(%q) differs from Import's", p.Name)
			}
			for _, v := range p.Values {
				if v.Pos.Line < 1 || v.Pos.Col < 1 {
					t.Fatalf("%s of %q is not placed: %v", v.Field, p.Name, v.Pos)
				}
			}
		}
	})
}

func FuzzGRPC(f *testing.F) {
	f.Add([]byte(grpcRetry(stdRetry)))
	f.Add([]byte(`{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 3}}], "retryThrottling": {"maxTokens": 1, "tokenRatio": 1e-3}}`))
	fuzzReader(f, GRPC, "testdata/grpc/deploy-shop.json")
}

func FuzzAWS(f *testing.F) {
	f.Add([]byte("[default]\nretry_mode = legacy\nmax_attempts = 3\n"))
	fuzzReader(f, AWS, "testdata/aws/deploy-config.ini")
}
