// Command presencewatch prints the fleet's device presence as JSON lines:
// first the current record of every device, then {"replayed":N} (N device
// lines before it), then every record as it is written, until SIGINT or
// SIGTERM (exit status 0).
//
// Usage, from the module's directory (presence/):
//
//	go run ./cmd/presencewatch -nats nats://127.0.0.1:4222
//
// A device line is
//
//	{"device":"<id>","state":"online"|"offline","node":"<node>","reason":"<reason>","rev":<n>}
//
// rev strictly increases per device; the last line of a device is its
// current state; a watcher that lags may skip intermediate records, never
// the latest. Started before any gateway, it prints {"replayed":0} and
// then follows the buckets once a gateway creates them.
//
// Flags: -nats urls (comma-separated; required), -prefix (the buckets'
// prefix, default "presence"). Bad flags: exit status 2. An engine that
// does not answer at start: a message naming the URL and exit status 1
// within 15 s.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/presence"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// startWithin bounds the start against an engine that does not answer.
const startWithin = 12 * time.Second

// bucketPoll is how often it looks for buckets no gateway created yet.
const bucketPoll = 250 * time.Millisecond

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// line is a device line; the field order is the contract's.
type line struct {
	Device string `json:"device"`
	State  string `json:"state"`
	Node   string `json:"node"`
	Reason string `json:"reason"`
	Rev    uint64 `json:"rev"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("presencewatch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	urls := fs.String("nats", "", "comma-separated NATS URLs (required)")
	prefix := fs.String("prefix", presence.DefaultPrefix, "the buckets' prefix")
	// The flag package would print a bad flag's error and then the whole
	// usage, burying the error: print the error alone with a one-line hint,
	// and the usage for -h only.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: presencewatch -nats URLS [flags]")
			fs.PrintDefaults()
			return exitOK
		}
		fmt.Fprintln(stderr, "presencewatch:", err)
		fmt.Fprintln(stderr, "run 'presencewatch -h' for the flags")
		return exitUsage
	}
	if *urls == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "presencewatch: -nats is required, and nothing else")
		return exitUsage
	}
	nc, err := nats.Connect(*urls, nats.Name("presencewatch"), nats.Timeout(3*time.Second),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		fmt.Fprintf(stderr, "presencewatch: cannot reach NATS at %s: %v\n", *urls, err)
		return exitFail
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(stderr, "presencewatch:", err)
		return exitFail
	}
	out := bufio.NewWriter(stdout)
	flush := func() {
		if err := out.Flush(); err != nil {
			fmt.Fprintln(stderr, "presencewatch:", err)
		}
	}
	replayed := false
	printReplayed := func(n int) {
		fmt.Fprintf(out, "{\"replayed\":%d}\n", n)
		replayed = true
		flush()
	}
	var st *presence.Store
	for st == nil {
		bctx, cancel := context.WithTimeout(ctx, startWithin)
		st, err = presence.BindStore(bctx, js, *prefix)
		cancel()
		switch {
		case ctx.Err() != nil:
			flush()
			return exitOK
		case errors.Is(err, presence.ErrNoBuckets):
			if !replayed {
				printReplayed(0)
			}
			sleep(ctx, bucketPoll)
		case err != nil && !replayed:
			fmt.Fprintf(stderr, "presencewatch: cannot use NATS JetStream at %s: %v\n", *urls, err)
			return exitFail
		case err != nil:
			sleep(ctx, bucketPoll)
		}
	}
	err = st.Watch(ctx, func(r presence.Record) {
		b, _ := json.Marshal(line{r.Device, string(r.State), r.Node, string(r.Reason), r.Rev})
		out.Write(b)
		out.WriteByte('\n')
		if replayed {
			flush() // each change as it comes; the replay in one go
		}
	}, func(n int) {
		if !replayed {
			printReplayed(n)
		}
	})
	flush()
	if ctx.Err() != nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "presencewatch:", err)
	return exitFail
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
