package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyAcceptsAConsistentTree(t *testing.T) {
	r := discover(t, goodTree())

	assert.Empty(t, messages(Verify(r, "v0.1.0")))
}

func TestVerifyFlagsAZeroPseudoVersionInAnUnpublishedModule(t *testing.T) {
	files := goodTree()
	files["bench/go.mod"] = gomod(rootPath+"/bench", "require example.com/proj "+zero, "replace example.com/proj => ../")
	r := discover(t, files)

	assert.Contains(t, messages(Verify(r, "v0.1.0")),
		"bench: requires example.com/proj at the zero pseudo-version "+zero)
}

func TestVerifyFlagsAZeroPseudoVersionOfAnOutsideModule(t *testing.T) {
	files := goodTree()
	files["bench/go.mod"] = gomod(rootPath+"/bench", "require example.com/other "+zero, "replace example.com/other => ../other")
	r := discover(t, files)

	assert.Contains(t, messages(Verify(r, "v0.1.0")),
		"bench: requires example.com/other at the zero pseudo-version "+zero)
}

func TestVerifyFlagsARequirementOnTheRootAtAnotherVersion(t *testing.T) {
	files := goodTree()
	files["sub/go.mod"] = gomod(rootPath+"/sub", "require example.com/proj v0.0.9", "replace example.com/proj => ../")
	r := discover(t, files)

	assert.Equal(t, []string{"sub: requires example.com/proj v0.0.9, not the release version v0.1.0"},
		messages(Verify(r, "v0.1.0")))
}

func TestVerifyFlagsARequirementWithoutAReplace(t *testing.T) {
	files := goodTree()
	files["sub/go.mod"] = gomod(rootPath+"/sub", "require example.com/proj v0.1.0")
	r := discover(t, files)

	assert.Equal(t, []string{"sub: requires example.com/proj without `replace example.com/proj => ../`"},
		messages(Verify(r, "v0.1.0")))
}

func TestVerifyFlagsAReplaceThatPointsElsewhere(t *testing.T) {
	files := goodTree()
	files["sub/cmd/load/go.mod"] = gomod(rootPath+"/sub/cmd/load",
		"require (\n\texample.com/proj v0.1.0\n\texample.com/proj/sub v0.1.0\n)",
		"replace (\n\texample.com/proj => ../..\n\texample.com/proj/sub => ../..\n)")
	r := discover(t, files)

	assert.Equal(t, []string{"sub/cmd/load: requires example.com/proj without `replace example.com/proj => ../../../`"},
		messages(Verify(r, "v0.1.0")))
}

func TestVerifyFlagsAPublishedModuleRequiringAnUnpublishedOne(t *testing.T) {
	files := goodTree()
	files["sub/go.mod"] = gomod(rootPath+"/sub",
		"require (\n\texample.com/proj v0.1.0\n\texample.com/proj/bench v0.1.0\n)",
		"replace (\n\texample.com/proj => ../\n\texample.com/proj/bench => ../bench\n)")
	r := discover(t, files)

	assert.Equal(t, []string{"sub: requires example.com/proj/bench, which is never published"},
		messages(Verify(r, "v0.1.0")))
}

func TestVerifyFlagsAPublishedModuleImportingTheRootsInternalPackage(t *testing.T) {
	files := goodTree()
	files["sub/sub_test.go"] = "package sub\n\nimport _ \"example.com/proj/internal/util\"\n"
	r := discover(t, files)

	assert.Equal(t, []string{"sub: sub/sub_test.go imports example.com/proj/internal/util, an internal package of module example.com/proj"},
		messages(Verify(r, "v0.1.0")))
}

func TestVerifyFlagsAnInternalImportInAFileForAnotherPlatform(t *testing.T) {
	files := goodTree()
	files["sub/sub_plan9.go"] = "//go:build plan9\n\npackage sub\n\nimport _ \"example.com/proj/internal/util\"\n"
	r := discover(t, files)

	assert.Len(t, Verify(r, "v0.1.0"), 1)
}

func TestVerifyFlagsANestedModuleWhosePathDoesNotMatchItsDirectory(t *testing.T) {
	files := goodTree()
	files["sub/go.mod"] = gomod(rootPath+"/other", "require example.com/proj v0.1.0", "replace example.com/proj => ../")
	files["sub/cmd/load/go.mod"] = gomod(rootPath+"/sub/cmd/load", "require example.com/proj v0.1.0", "replace example.com/proj => ../../..")
	r := discover(t, files)

	assert.Contains(t, messages(Verify(r, "v0.1.0")),
		"sub: module path example.com/proj/other is not example.com/proj/sub, so tag sub/v0.1.0 would not name it")
}

func TestReleaseVersionIsTheVersionModulesRequireOneAnotherAt(t *testing.T) {
	r := discover(t, goodTree())

	v, err := ReleaseVersion(r)

	require.NoError(t, err)
	assert.Equal(t, "v0.1.0", v)
}

func TestReleaseVersionLeavesZeroPseudoVersionsToVerify(t *testing.T) {
	files := goodTree()
	files["bench/go.mod"] = gomod(rootPath+"/bench", "require example.com/proj "+zero, "replace example.com/proj => ../")
	r := discover(t, files)

	v, err := ReleaseVersion(r)

	require.NoError(t, err)
	assert.Equal(t, "v0.1.0", v)
}

func TestReleaseVersionFailsWhenModulesDisagree(t *testing.T) {
	files := goodTree()
	files["bench/go.mod"] = gomod(rootPath+"/bench", "require example.com/proj v0.2.0", "replace example.com/proj => ../")
	r := discover(t, files)

	_, err := ReleaseVersion(r)

	assert.ErrorIs(t, err, errManyVersions)
}

func TestReleaseVersionFailsWhenNoModuleRequiresAnother(t *testing.T) {
	r := discover(t, map[string]string{"go.mod": gomod(rootPath)})

	_, err := ReleaseVersion(r)

	assert.ErrorIs(t, err, errNoVersion)
}

func TestCheckVersionAcceptsOnlyTaggableReleases(t *testing.T) {
	for v, want := range map[string]error{
		"v0.1.0":                             nil,
		"v1.4.2-rc.1":                        nil,
		"0.1.0":                              errBadVersion,
		"v0.1":                               errBadVersion,
		"v0.1.0+meta":                        errBadVersion,
		"v2.0.0":                             errMajorVersion,
		"v0.0.0-20260101000000-abcdefabcdef": errPseudoVersion,
		zero:                                 errPseudoVersion,
	} {
		err := CheckVersion(v)
		if want == nil {
			assert.NoError(t, err, v)
		} else {
			assert.ErrorIs(t, err, want, v)
		}
	}
}
