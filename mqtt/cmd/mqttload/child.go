package main

import (
	"context"
	"flag"
	"io"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// The processes of a run talk in lines: see package loadtest. A broker is
// its server, and its result is a brokerResult.
type emitter = loadtest.Emitter[brokerResult]

// runChild runs a broker or a load process: args start with -role.
func runChild(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var keepAlive int
	return loadtest.RunChild(ctx, args, stdin, stdout, stderr, loadtest.Roles[brokerResult]{
		Name: "mqttload child",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&keepAlive, "keepalive", 4, "loader: Keep Alive in seconds")
		},
		Server: runBroker,
		Loader: func(ctx context.Context, lc loadtest.LoadConfig, out *emitter, cmds <-chan string) error {
			return runLoader(ctx, lc, keepAlive, out, cmds)
		},
	})
}
