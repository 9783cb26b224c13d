package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// writeTree creates the files (slash paths to contents) under a new
// temporary directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	return root
}

// gomod returns a go.mod for module path p with the given extra lines.
func gomod(p string, lines ...string) string {
	return "module " + p + "\n\ngo 1.25\n" + strings.Join(lines, "\n") + "\n"
}

const (
	rootPath = "example.com/proj"
	zero     = "v0.0.0-00010101000000-000000000000"
)

// goodTree is a repository laid out as go-schedule is: a root module, a
// published sub-module with an internal package, a benchmark module and a
// command module under the sub-module's cmd/, all requiring one another at
// v0.1.0 with replace directives.
func goodTree() map[string]string {
	return map[string]string{
		"go.mod":                       gomod(rootPath),
		"lib.go":                       "package proj\n\n// Hello says hello.\nfunc Hello() string { return \"hello\" }\n",
		"internal/util/util.go":        "package util\n\n// N is a number.\nconst N = 1\n",
		"lib_test.go":                  "package proj\n\nimport _ \"example.com/proj/internal/util\"\n",
		"sub/go.mod":                   gomod(rootPath+"/sub", "require example.com/proj v0.1.0", "replace example.com/proj => ../"),
		"sub/sub.go":                   "package sub\n\nimport (\n\tproj \"example.com/proj\"\n\t_ \"example.com/proj/sub/internal/wire\"\n)\n\n// Greeting greets.\nfunc Greeting() string { return proj.Hello() }\n",
		"sub/internal/wire/wire.go":    "package wire\n",
		"sub/cmd/load/go.mod":          gomod(rootPath+"/sub/cmd/load", "require (\n\texample.com/proj v0.1.0\n\texample.com/proj/sub v0.1.0\n)", "replace (\n\texample.com/proj => ../../..\n\texample.com/proj/sub => ../..\n)"),
		"sub/cmd/load/main.go":         "package main\n\nimport _ \"example.com/proj/sub/internal/wire\"\n\nfunc main() {}\n",
		"bench/go.mod":                 gomod(rootPath+"/bench", "require example.com/proj v0.1.0", "replace example.com/proj => ../"),
		"bench/bench.go":               "package bench\n",
		"testdata/broken/go.mod":       "this is not a go.mod",
		".hidden/go.mod":               "neither is this",
		"sub/testdata/fixture/main.go": "package main\n",
	}
}

// discover writes files and discovers the modules in them.
func discover(t *testing.T, files map[string]string) *Repo {
	t.Helper()
	r, err := Discover(writeTree(t, files))
	require.NoError(t, err)
	return r
}

// messages returns the problems as "dir: message" lines.
func messages(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Module.Dir+": "+p.Msg)
	}
	return out
}
