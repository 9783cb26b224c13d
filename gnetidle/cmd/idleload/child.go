package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// The processes of a run talk in lines: see package loadtest. A server's
// result is a serverResult.
type emitter = loadtest.Emitter[serverResult]

// runChild runs a server or a load process; args start with -role.
func runChild(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var idle, beat time.Duration
	var loops int
	return loadtest.RunChild(ctx, args, stdin, stdout, stderr, loadtest.Roles[serverResult]{
		Name: "idleload child",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&idle, "idle", 0, "the idle timeout")
			fs.IntVar(&loops, "loops", 0, "server: gnet event loops (0: one per CPU)")
			fs.DurationVar(&beat, "beat", time.Second, "loader: interval between a client's heartbeats")
		},
		Server: func(ctx context.Context, sc loadtest.ServerConfig, out *emitter, cmds <-chan string) error {
			return runServer(ctx, serverConfig{ServerConfig: sc, Idle: idle, Loops: loops}, out, cmds, stderr)
		},
		Loader: func(ctx context.Context, lc loadtest.LoadConfig, out *emitter, cmds <-chan string) error {
			return runLoader(ctx, lc, idle, beat, out, cmds)
		},
	})
}
