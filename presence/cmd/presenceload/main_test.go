package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// A small run, as real processes: every device connects, heartbeats cause
// no engine message beyond the leases, and the killed gateway's devices
// are each recorded node_lost once within 2×lease + 5 s.
func TestSmallRunRecordsEveryKilledDeviceOnce(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "presenceload")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	out, err := exec.Command(bin, "-devices", "600", "-gateways", "3", "-quiet", "3s", "-beat", "1s", "-timeout", "10s", "-modes", "on").Output()
	require.NoError(t, err)
	raw := regexp.MustCompile(`(?m)^raw presence=on .*$`).FindString(string(out))
	require.NotEmpty(t, raw, "%s", out)
	field := func(name string) int {
		m := regexp.MustCompile(`\b` + name + `=(\d+)\b`).FindStringSubmatch(raw)
		require.NotNil(t, m, name)
		v, _ := strconv.Atoi(m[1])
		return v
	}
	assert.Equal(t, 600, field("connected"))
	assert.Equal(t, 200, field("kill_devices"))
	assert.Equal(t, 200, field("kill_recorded"))
	assert.Zero(t, field("kill_twice"))
	assert.Zero(t, field("kill_missing"))
	assert.Positive(t, field("beats"))
	// In the quiet window the engine hears the leases of three gateways
	// (three refreshes a lease each) and their listings, never one message
	// per heartbeat.
	assert.Less(t, field("quiet_msgs"), field("beats")/10)
	assert.True(t, strings.Contains(string(out), "| on |"), "%s", out)
}

func TestAnUnknownFlagPrintsTheErrorThenAOneLineHint(t *testing.T) {
	var stderr strings.Builder
	code := run(t.Context(), []string{"-bogus"}, &strings.Builder{}, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "presenceload: flag provided but not defined: -bogus\nrun 'presenceload -h' for the flags\n", stderr.String())
}

func TestBadFlagsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"-gateways", "1"}, {"-devices", "0"}, {"-lease", "1500ms"}, {"-devices", "100000", "-gateways", "3"}, {"-bogus"}} {
		code := run(t.Context(), args, &strings.Builder{}, &strings.Builder{})
		assert.Equal(t, exitUsage, code, "%q", args)
	}
}
