package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiscoverFindsEveryModuleOutsideIgnoredDirectories(t *testing.T) {
	r := discover(t, goodTree())

	var dirs []string
	for _, m := range r.Modules {
		dirs = append(dirs, m.Dir)
	}
	assert.Equal(t, []string{".", "bench", "sub", "sub/cmd/load"}, dirs)
}

func TestDiscoverPublishesRootAndSubModulesOnly(t *testing.T) {
	files := goodTree()
	files["tools/go.mod"] = gomod(rootPath + "/tools")
	files["extra/go.mod"] = "// unpublished: an experiment\n" + gomod(rootPath+"/extra")
	files["later/go.mod"] = gomod(rootPath + "/later")
	r := discover(t, files)

	why := map[string]string{}
	for _, m := range r.Modules {
		assert.Equal(t, m.Why == "", m.Published, m.Dir)
		why[m.Dir] = m.Why
	}
	assert.Equal(t, map[string]string{
		".":            "",
		"bench":        "under bench/",
		"extra":        "marked: an experiment",
		"later":        "",
		"sub":          "",
		"sub/cmd/load": "a command module under cmd/",
		"tools":        "under tools/",
	}, why)
}

func TestDiscoverFailsWithoutARootModule(t *testing.T) {
	_, err := Discover(writeTree(t, map[string]string{"sub/go.mod": gomod(rootPath + "/sub")}))

	assert.ErrorIs(t, err, errNoRootModule)
}

func TestTagPrefixesANestedModuleWithItsDirectory(t *testing.T) {
	r := discover(t, goodTree())

	assert.Equal(t, "v1.2.3", r.ByPath(rootPath).Tag("v1.2.3"))
	assert.Equal(t, "sub/v1.2.3", r.ByPath(rootPath+"/sub").Tag("v1.2.3"))
}

func TestOwnerIsTheModuleWithTheLongestMatchingPath(t *testing.T) {
	r := discover(t, goodTree())

	require.NotNil(t, r.Owner(rootPath+"/sub/internal/wire"))
	assert.Equal(t, rootPath+"/sub", r.Owner(rootPath+"/sub/internal/wire").Path)
	assert.Equal(t, rootPath, r.Owner(rootPath+"/internal/util").Path)
	assert.Nil(t, r.Owner("example.com/other"))
	assert.Nil(t, r.Owner(rootPath+"x/y"))
}
