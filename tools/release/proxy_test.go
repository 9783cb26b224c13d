package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPublishWritesTheProxyFilesUnderEscapedPaths(t *testing.T) {
	r := discover(t, map[string]string{"go.mod": gomod("example.com/Proj"), "p.go": "package proj\n"})
	dir := t.TempDir()

	require.NoError(t, Publish(r, r.Published(), "v0.1.0", dir))

	vdir := filepath.Join(dir, "example.com", "!proj", "@v")
	list, err := os.ReadFile(filepath.Join(vdir, "list"))
	require.NoError(t, err)
	assert.Equal(t, "v0.1.0\n", string(list))
	mod, err := os.ReadFile(filepath.Join(vdir, "v0.1.0.mod"))
	require.NoError(t, err)
	assert.Equal(t, gomod("example.com/Proj"), string(mod))
	info, err := os.ReadFile(filepath.Join(vdir, "v0.1.0.info"))
	require.NoError(t, err)
	assert.Contains(t, string(info), `"Version":"v0.1.0"`)
	assert.FileExists(t, filepath.Join(vdir, "v0.1.0.zip"))
}

// testdata/broken holds a go.mod, so it is a nested module too, as the go
// command sees it.
func TestPublishedZipLeavesOutNestedModulesAndVersionControl(t *testing.T) {
	files := goodTree()
	files[".git"] = "gitdir: /elsewhere\n"
	files["sub/.hg/store"] = "data"
	r := discover(t, files)
	dir := t.TempDir()

	require.NoError(t, Publish(r, r.Published(), "v0.1.0", dir))

	assert.Equal(t, []string{
		"example.com/proj@v0.1.0/go.mod",
		"example.com/proj@v0.1.0/internal/util/util.go",
		"example.com/proj@v0.1.0/lib.go",
		"example.com/proj@v0.1.0/lib_test.go",
	}, zipNames(t, filepath.Join(dir, "example.com", "proj", "@v", "v0.1.0.zip")))
	assert.Equal(t, []string{
		"example.com/proj/sub@v0.1.0/go.mod",
		"example.com/proj/sub@v0.1.0/internal/wire/wire.go",
		"example.com/proj/sub@v0.1.0/sub.go",
		"example.com/proj/sub@v0.1.0/testdata/fixture/main.go",
	}, zipNames(t, filepath.Join(dir, "example.com", "proj", "sub", "@v", "v0.1.0.zip")))
}

func zipNames(t *testing.T, name string) []string {
	t.Helper()
	zr, err := zip.OpenReader(name)
	require.NoError(t, err)
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	return names
}
