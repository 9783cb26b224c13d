package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// TestMain runs the command's code as a server when the parent under test
// re-executes this test binary; otherwise it runs the tests and fails the
// run if one leaves a goroutine behind.
func TestMain(m *testing.M) {
	loadtest.RunIfChild(run)
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// TestLoadSmall runs the whole comparison at a tiny size: every request
// must be answered by both servers, and the report must show both and the
// ratios.
func TestLoadSmall(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-conns", "50", "-every", "200ms", "-window", "1s", "-rounds", "2",
		"-read-timeout", "2s", "-idle-timeout", "5s"}, nil, &stdout, &stderr)
	t.Logf("report:\n%s", stdout.String())
	require.Equal(t, loadtest.ExitPass, code, "exit status; standard error:\n%s", stderr.String())
	out := stdout.String()
	for _, want := range []string{"netdeadline listener, round 1", "plain listener, round 2", "median of 2 rounds"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, stderr.String(), "FAIL")
}

func TestFlagsRefuseBadValues(t *testing.T) {
	var out bytes.Buffer
	for _, bad := range [][]string{
		{"-conns", "0"}, {"-every", "0s"}, {"-every", "1m", "-idle-timeout", "30s"}, {"-rounds", "0"}, {"stray"},
	} {
		_, err := parseFlags(bad, &out)
		assert.Error(t, err, strings.Join(bad, " "))
	}
}
