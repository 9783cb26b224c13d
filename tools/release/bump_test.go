package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBumpMovesEveryRequirementOnTheRepositoryAndKeepsReplaces(t *testing.T) {
	files := goodTree()
	files["bench/go.mod"] = gomod(rootPath+"/bench", "require example.com/proj "+zero, "replace example.com/proj => ../")
	r := discover(t, files)

	changed, err := Bump(r, "v0.2.0")

	require.NoError(t, err)
	assert.Len(t, changed, 4) // bench, sub, and the two in sub/cmd/load
	again, err := Discover(r.Root)
	require.NoError(t, err)
	assert.Empty(t, messages(Verify(again, "v0.2.0")))
	v, err := ReleaseVersion(again)
	require.NoError(t, err)
	assert.Equal(t, "v0.2.0", v)
}

func TestBumpLeavesOtherRequirementsAlone(t *testing.T) {
	files := goodTree()
	files["sub/go.mod"] = gomod(rootPath+"/sub", "require (\n\texample.com/other v1.0.0\n\texample.com/proj v0.1.0\n)", "replace example.com/proj => ../")
	r := discover(t, files)

	_, err := Bump(r, "v0.2.0")

	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(r.Root, "sub", "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "example.com/other v1.0.0")
	assert.Contains(t, string(data), "example.com/proj v0.2.0")
	assert.Contains(t, string(data), "replace example.com/proj => ../")
}

func TestBumpFailsWhenNoModuleRequiresAnother(t *testing.T) {
	r := discover(t, map[string]string{"go.mod": gomod(rootPath)})

	_, err := Bump(r, "v0.2.0")

	assert.ErrorIs(t, err, errNoVersionBumps)
}
