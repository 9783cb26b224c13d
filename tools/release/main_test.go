package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTagsPrintsATagPerPublishedModule(t *testing.T) {
	root := writeTree(t, goodTree())
	var out bytes.Buffer

	require.NoError(t, run([]string{"tags", "-root", root}, &out, io.Discard))

	assert.Equal(t, "v0.1.0\nsub/v0.1.0\n", out.String())
}

func TestTagsRefusesAVersionThatCannotBeTagged(t *testing.T) {
	root := writeTree(t, goodTree())

	err := run([]string{"tags", "-root", root, "v2.0.0"}, io.Discard, io.Discard)

	assert.ErrorIs(t, err, errMajorVersion)
}

func TestCheckFailsBeforePublishingWhenModulesDisagreeOnTheVersion(t *testing.T) {
	files := goodTree()
	files["bench/go.mod"] = gomod(rootPath+"/bench", "require example.com/proj v0.2.0", "replace example.com/proj => ../")
	root := writeTree(t, files)
	var out bytes.Buffer

	err := run([]string{"check", "-root", root}, &out, io.Discard)

	assert.ErrorIs(t, err, errFailed)
	assert.Contains(t, out.String(), "FAIL  release version: ")
}
