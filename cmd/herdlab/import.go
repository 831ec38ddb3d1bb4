package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/configs"
)

var importCmd = &command{
	summary: `Print the retry policies of a configuration file as a scenario fragment.

FORMAT is grpc (a gRPC service config, JSON), envoy (an Envoy v3
bootstrap, YAML or JSON), istio (VirtualServices and DestinationRules),
linkerd (ServiceProfiles, HTTPRoutes) or aws (an AWS shared config
file). Every policy in FILE becomes a strategy, each field commented
with the line it was read from, or with the document that sets the
default the file leaves out; for envoy and istio, the upstreams become
services. A strategy pasted from here runs as the from: that names the
same policy does; from: keeps reading the file, so CI judges what is
deployed. A file the format's project would refuse is refused here, with
its reason and position, and exits 2.`,
	usage: "FORMAT FILE",
	run: func(c *cli, fs *flag.FlagSet) int {
		if fs.NArg() != 2 {
			fmt.Fprintf(c.stderr, "herdlab import: want FORMAT FILE, with FORMAT one of %s\n", strings.Join(configs.Formats, ", "))
			return exitBadInput
		}
		format, file := fs.Arg(0), fs.Arg(1)
		if !slices.Contains(configs.Formats, format) {
			fmt.Fprintf(c.stderr, "herdlab import: unknown format %q (want one of %s)\n", format, strings.Join(configs.Formats, ", "))
			return exitBadInput
		}
		data, err := readConfig(file)
		if err != nil {
			fmt.Fprintf(c.stderr, "%s:1:1: cannot read: %v\n", file, err)
			return exitBadInput
		}
		frag, err := configs.Import(format, file, data)
		if err != nil {
			for _, e := range unjoinErr(err) {
				fmt.Fprintln(c.stderr, e)
			}
			return exitBadInput
		}
		if err := frag.WriteYAML(c.stdout); err != nil {
			fmt.Fprintf(c.stderr, "herdlab import: %v\n", err)
			return exitFailed
		}
		return exitOK
	},
}

// readConfig reads a configuration file of at most configs.MaxFileSize
// bytes.
func readConfig(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, configs.MaxFileSize+1))
	if err == nil && len(data) > configs.MaxFileSize {
		err = fmt.Errorf("larger than %d bytes", configs.MaxFileSize)
	}
	return data, err
}

// unjoinErr lists the errors joined in err.
func unjoinErr(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
