package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// The tests run the commands as real processes, built once here.
var gateBin, watchBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "presencegate-test-")
	if err != nil {
		panic(err)
	}
	gateBin, watchBin = filepath.Join(dir, "presencegate"), filepath.Join(dir, "presencewatch")
	for bin, pkg := range map[string]string{gateBin: ".", watchBin: "../presencewatch"} {
		cmd := exec.Command("go", "build", "-race", "-o", bin, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}
