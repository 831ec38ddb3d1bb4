// Command hello stands in for herdlab in the release tool's test: a small
// program, quick to cross-compile, with the variables make stamps.
package main

var version, commit string

func main() { println("hello", version, commit) }
