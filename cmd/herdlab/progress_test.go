package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgressIsSilentOffATerminal(t *testing.T) {
	var buf bytes.Buffer
	assert.Nil(t, startProgress(&buf, "x", 100), "not a file")

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	p := startProgress(w, "x", 100)
	assert.Nil(t, p, "a pipe is not a terminal")
	p.add(5) // a nil progress takes work and shows nothing
	p.finish()
}
