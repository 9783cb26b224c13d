// Command jobworker runs one worker node of a go-schedule jobs queue, on
// an embedded NATS server (the default) or on the NATS servers -nats
// names. Its handler is driven by each job's payload: a JSON object
// {"fail":K,"sleep":"D"} makes each attempt sleep D and fail while its
// number is at most K; any other payload succeeds at once. It prints one
// JSON object per line on stdout (times in Unix milliseconds): ready,
// start and the end of every attempt (done, fail, dead or superseded; no
// end for an attempt abandoned past -grace or whose end the engine would
// not record), and stopped on SIGTERM or SIGINT, after which it exits 0.
// Bad flags exit 2; an engine it cannot reach at start (or an embedded
// server that cannot start) exits 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/jobs"
	"github.com/go-schedule/schedule/jobs/internal/dial"
	"github.com/go-schedule/schedule/jobs/internal/jsonl"
	"github.com/go-schedule/schedule/presence/embedded"
	"github.com/nats-io/nats.go"
)

// config is what the flags say.
type config struct {
	urls, store, node, queue string
	lease, grace             time.Duration
	workers, replicas        int
	retry                    []time.Duration
}

// parseFlags checks the flags; an error is a usage error (exit 2).
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("jobworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.urls, "nats", "", "comma-separated NATS URLs; empty: an embedded server storing in -store")
	fs.StringVar(&c.store, "store", "jobs-data", "the embedded server's store directory")
	fs.StringVar(&c.node, "node", "", "this worker's name, [A-Za-z0-9_-]{1,64}; required with -nats, else local")
	fs.StringVar(&c.queue, "queue", jobs.DefaultQueue, "the queue, [A-Za-z0-9_-]{1,64}")
	fs.DurationVar(&c.lease, "lease", jobs.DefaultLease, "the lease, whole seconds, at least 1s")
	fs.IntVar(&c.workers, "workers", jobs.DefaultWorkers, "attempts run at once, at least 1")
	retry := fs.String("retry", "1s,2s,5s,10s,20s", "waits after failed attempts, comma-separated; empty: no retries")
	fs.IntVar(&c.replicas, "replicas", 1, "replicas of the buckets it creates, 1..5")
	fs.DurationVar(&c.grace, "grace", 10*time.Second, "how long running attempts may finish on SIGTERM or SIGINT")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: jobworker [flags]")
		fmt.Fprintln(w, "Runs one worker of a go-schedule jobs queue; one JSON object per line on stdout.")
		fs.PrintDefaults()
		fmt.Fprintln(w, "Exit status: 0 after SIGTERM or SIGINT, 1 when NATS cannot be reached at start, 2 for bad flags.")
	}
	// The flag package would print a bad flag's error and then the whole
	// usage, burying the error: the caller prints the error alone with a
	// one-line hint, and the usage is printed for -h only.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
	}
	if err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.node == "" {
		if c.urls != "" {
			return c, errors.New("-node is required with -nats")
		}
		c.node = "local"
	}
	if !jobs.ValidName(c.node) {
		return c, fmt.Errorf("-node %q: 1 to 64 characters of [A-Za-z0-9_-]", c.node)
	}
	if !jobs.ValidName(c.queue) {
		return c, fmt.Errorf("-queue %q: 1 to 64 characters of [A-Za-z0-9_-]", c.queue)
	}
	if c.lease < time.Second || c.lease%time.Second != 0 {
		return c, fmt.Errorf("-lease %v: whole seconds, at least 1s", c.lease)
	}
	if c.workers < 1 {
		return c, fmt.Errorf("-workers %d: at least 1", c.workers)
	}
	if c.replicas < 1 || c.replicas > 5 {
		return c, fmt.Errorf("-replicas %d: 1 to 5", c.replicas)
	}
	if c.grace < 0 {
		return c, fmt.Errorf("-grace %v: not negative", c.grace)
	}
	c.retry = []time.Duration{}
	if *retry != "" {
		for _, s := range strings.Split(*retry, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil || d <= 0 {
				return c, fmt.Errorf("-retry %q: %q is not a positive duration", *retry, s)
			}
			c.retry = append(c.retry, d)
		}
	}
	return c, nil
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "jobworker:", err)
		fmt.Fprintln(stderr, "run 'jobworker -h' for the flags")
		return 2
	}
	sig, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stopSignals()
	out := jsonl.New(stdout)

	urls := c.urls
	if urls == "" {
		s, err := embedded.Start(embedded.Options{Name: "jobs-" + c.node, StoreDir: c.store})
		if err != nil {
			fmt.Fprintf(stderr, "jobworker: embedded NATS server in %s: %v\n", c.store, err)
			return 1
		}
		defer func() { s.Shutdown(); s.WaitForShutdown() }()
		urls = s.ClientURL()
		fmt.Fprintf(stdout, "nats on %s\n", urls)
	}
	started := time.Now()
	nc, err := nats.Connect(urls, nats.Timeout(dial.Timeout(urls)), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		fmt.Fprintf(stderr, "jobworker: cannot reach NATS at %s: %v\n", urls, err)
		return 1
	}
	defer nc.Close()
	ctx, cancel := context.WithDeadline(context.Background(), started.Add(dial.Within))
	defer cancel()
	cl, err := jobs.Open(ctx, nc, jobs.Config{Queue: c.queue, Replicas: c.replicas})
	if err != nil {
		fmt.Fprintf(stderr, "jobworker: NATS at %s: %v\n", urls, err)
		return 1
	}
	w, err := cl.StartWorker(ctx, jobs.WorkerConfig{
		Node: c.node, Lease: c.lease, Workers: c.workers, Retry: c.retry,
		Handler: handle, OnEvent: func(ev jobs.Event) { _ = out.Write(line(ev)) },
	})
	if err != nil {
		fmt.Fprintf(stderr, "jobworker: NATS at %s: %v\n", urls, err)
		return 1
	}
	_ = out.Write(struct {
		Event string `json:"event"`
		Node  string `json:"node"`
	}{"ready", c.node})

	<-sig.Done()
	grace, cancelGrace := context.WithTimeout(context.Background(), c.grace)
	defer cancelGrace()
	_ = w.Stop(grace)
	_ = out.Write(struct {
		Event string `json:"event"`
		Node  string `json:"node"`
	}{"stopped", c.node})
	return 0
}

// eventLine is an event as the command prints it.
type eventLine struct {
	Event   string `json:"event"`
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	Due     *int64 `json:"due,omitempty"`
	At      int64  `json:"at"`
	Next    *int64 `json:"next,omitempty"`
	Node    string `json:"node"`
}

func line(ev jobs.Event) eventLine {
	l := eventLine{Event: string(ev.Kind), Job: ev.Key, Attempt: ev.Attempt, At: ev.At.UnixMilli(), Node: ev.Node}
	if ev.Kind == jobs.EventStart {
		d := ev.Due.UnixMilli()
		l.Due = &d
	}
	if ev.Kind == jobs.EventFail {
		n := ev.Next.UnixMilli()
		l.Next = &n
	}
	return l
}

// behaviour is the payload that drives the built-in handler.
type behaviour struct {
	Fail  int    `json:"fail"`
	Sleep string `json:"sleep"`
}

// errFailed is the built-in handler's failure.
var errFailed = errors.New("failed as the payload asks")

// handle is the built-in handler: see the package comment.
func handle(ctx context.Context, j jobs.Job) error {
	var b behaviour
	if json.Unmarshal(j.Payload, &b) != nil {
		return nil
	}
	var d time.Duration
	if b.Sleep != "" {
		var err error
		if d, err = time.ParseDuration(b.Sleep); err != nil {
			return nil
		}
	}
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if j.Attempt <= b.Fail {
		return errFailed
	}
	return nil
}
