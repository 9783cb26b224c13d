package main

import (
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPackagesListsWhatUsersImportAndTheCommands(t *testing.T) {
	files := goodTree()
	files["cmd/tool/main.go"] = "package main\n\nfunc main() {}\n"
	files["onlytests/x_test.go"] = "package onlytests\n"
	r := discover(t, files)

	pkgs, err := Packages(r, r.RootModule())

	require.NoError(t, err)
	assert.Equal(t, []Package{
		{ImportPath: rootPath, Use: "Hello", UseKind: token.FUNC},
		{ImportPath: rootPath + "/cmd/tool", Main: true},
	}, pkgs)
}

func TestExportedNamePrefersAFunctionAndSkipsGenericOnes(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.go": "package p\n\nconst C = 1\n\nvar V = 2\n\ntype G[T any] struct{}\n\nfunc Map[T any](T) {}\n\nfunc (G[T]) M() {}\n\ntype T struct{}\n\nfunc unexported() {}\n",
		"b.go": "package p\n\nfunc F() {}\n",
	})

	name, kind, err := exportedName(dir, []string{"a.go", "b.go"})

	require.NoError(t, err)
	assert.Equal(t, "F", name)
	assert.Equal(t, token.FUNC, kind)
}

func TestExportedNameFallsBackToATypeThenAVariable(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.go": "package p\n\nconst C = 1\n\nvar V = 2\n\ntype T struct{}\n",
		"b.go": "package p\n\nconst D = 1\n\nvar W = 2\n",
	})

	name, _, err := exportedName(dir, []string{"a.go"})
	require.NoError(t, err)
	assert.Equal(t, "T", name)
	name, _, err = exportedName(dir, []string{"b.go"})
	require.NoError(t, err)
	assert.Equal(t, "W", name)
}

func TestConsumerProgramImportsAPackageWithNothingExportedBlank(t *testing.T) {
	m := &Module{Path: rootPath}
	src, err := consumerProgram(m, "v0.1.0", []Package{
		{ImportPath: rootPath, Use: "T", UseKind: token.TYPE},
		{ImportPath: rootPath + "/quiet"},
	})

	require.NoError(t, err)
	assert.Contains(t, string(src), "p0 \"example.com/proj\"")
	assert.Contains(t, string(src), "var _ *p0.T")
	assert.Contains(t, string(src), "_ \"example.com/proj/quiet\"")
}
