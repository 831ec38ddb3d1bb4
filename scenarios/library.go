package scenarios

import "embed"

// Library holds the shipped scenario files (*.yaml of this folder), for
// front ends that offer them as examples: herdlab ui and the static site.
//
//go:embed *.yaml
var Library embed.FS
