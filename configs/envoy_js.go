//go:build js

package configs

// The browser build leaves the Envoy reader out: Envoy's Go types
// (go-control-plane, with their validation) add about 22 MB to the
// WebAssembly binary, which holds 9 MB without them. A scenario whose
// strategy comes from an Envoy file is refused here, with the way round.

func init() {
	refuse := func(file string) error {
		return &Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "the browser lab does not read Envoy files (Envoy's Go types would add about 22 MB to it): run `herdlab import envoy " + file + "` and paste the strategy it prints"}
	}
	readers[Envoy] = reader{
		read: func(ref Ref, _ []byte) (*Policy, error) { return nil, refuse(ref.File) },
		all:  func(file string, _ []byte) (*Fragment, error) { return nil, refuse(file) },
	}
}
