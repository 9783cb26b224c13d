package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// offlineConsumer publishes the published modules of r and returns a
// Consumer that fetches from that proxy alone, so that the test needs no
// network.
func offlineConsumer(t *testing.T, r *Repo) *Consumer {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	proxy := filepath.Join(dir, "proxy")
	require.NoError(t, Publish(r, r.Published(), "v0.1.0", proxy))
	c, err := NewConsumer(dir, proxy, rootPath)
	require.NoError(t, err)
	for i, kv := range c.Env {
		if strings.HasPrefix(kv, "GOPROXY=") {
			c.Env[i] = "GOPROXY=" + fileURL(proxy)
		}
	}
	return c
}

func TestConsumerGetsASubModuleThatRequiresAReleasedRoot(t *testing.T) {
	r := discover(t, goodTree())
	c := offlineConsumer(t, r)

	summary, err := c.Check(r, r.ByPath(rootPath+"/sub"), "v0.1.0")

	require.NoError(t, err)
	assert.Contains(t, summary, "1 package(s) imported and run")
}

func TestConsumerFailsOnASubModuleThatRequiresTheZeroPseudoVersion(t *testing.T) {
	files := goodTree()
	files["sub/go.mod"] = gomod(rootPath+"/sub", "require example.com/proj "+zero, "replace example.com/proj => ../")
	r := discover(t, files)
	c := offlineConsumer(t, r)

	_, err := c.Check(r, r.ByPath(rootPath+"/sub"), "v0.1.0")

	require.Error(t, err)
	assert.Contains(t, err.Error(), "go get example.com/proj/sub@v0.1.0")
	assert.Contains(t, err.Error(), zero)
}

func TestConsumerInstallsTheCommandsOfAModuleWithoutReplaces(t *testing.T) {
	files := goodTree()
	files["cmd/tool/main.go"] = "package main\n\nimport proj \"example.com/proj\"\n\nfunc main() { println(proj.Hello()) }\n"
	r := discover(t, files)
	c := offlineConsumer(t, r)

	summary, err := c.Check(r, r.RootModule(), "v0.1.0")

	require.NoError(t, err)
	assert.Contains(t, summary, "1 command(s) built and installed with go install")
	assert.FileExists(t, filepath.Join(c.Dir, "gobin", "tool"))
}
