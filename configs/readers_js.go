//go:build js

package configs

// The browser build leaves the readers out: the browser lab reads no
// files (a scenario's from: is refused before any reader is called), and
// the readers would add about a megabyte to its WebAssembly, Envoy's Go
// types 22 MB more. Each format refuses, with the way round.

func init() {
	for _, format := range Formats {
		refuse := func(file string) error {
			return &Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "the browser lab reads no configuration files: run `herdlab import " + format + " " + file + "` and paste the strategies it prints"}
		}
		readers[format] = reader{
			read: func(ref Ref, _ []byte) (*Policy, error) { return nil, refuse(ref.File) },
			all:  func(file string, _ []byte) (*Fragment, error) { return nil, refuse(file) },
		}
	}
}
