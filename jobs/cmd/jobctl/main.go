// Command jobctl adds, cancels, looks up and bulk-loads jobs of a
// go-schedule jobs queue:
//
//	jobctl -nats URLS [-queue NAME] [-replicas N] COMMAND [flags]
//
// Commands: add -key K (-in D | -at RFC3339) [-payload P] [-unique];
// cancel -key K; get -key K; load (lines {"job":K,"in":"D"} or
// {"job":K,"at":"RFC3339"}, each with an optional "payload", on stdin).
// Each prints one JSON object on stdout; times are Unix milliseconds. Bad
// input exits 2, an unreachable engine 1, a malformed load line 1 (after
// the others are added), and add -unique of a pending or running job 3.
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
	"time"
	"unicode/utf8"

	"github.com/go-schedule/schedule/jobs"
	"github.com/go-schedule/schedule/jobs/internal/dial"
	"github.com/go-schedule/schedule/jobs/internal/jsonl"
	"github.com/nats-io/nats.go"
)

// loadWithin bounds a load.
const loadWithin = 10 * time.Minute

// Exit statuses.
const (
	exitOK     = 0
	exitEngine = 1
	exitUsage  = 2
	exitExists = 3
)

// usageError is bad input: exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// global is what the flags before the command say.
type global struct {
	urls, queue string
	replicas    int
}

// job is one job to add.
type job struct {
	key     string
	due     time.Time
	payload []byte
}

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// parse parses args with fs. The flag package would print a bad flag's
// error and then the whole usage, burying the error: run prints the error
// alone with a one-line hint, and the usage goes to stderr for -h only.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
	}
	return err
}

// fail reports bad input and returns exitUsage, or exitOK for -h, whose
// usage parse printed.
func fail(stderr io.Writer, where string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", where, err)
	fmt.Fprintf(stderr, "run '%s -h' for the flags\n", where)
	return exitUsage
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g, cmd, rest, err := parseGlobal(args, stderr)
	if err != nil {
		return fail(stderr, "jobctl", err)
	}
	out := jsonl.New(stdout)
	switch cmd {
	case "add":
		j, unique, err := parseAdd(rest, stderr)
		if err != nil {
			return fail(stderr, "jobctl add", err)
		}
		return withClient(g, stderr, dial.Within, func(ctx context.Context, c *jobs.Client) int {
			add := c.Add
			if unique {
				add = c.AddUnique
			}
			err := add(ctx, j.key, j.due, j.payload)
			if errors.Is(err, jobs.ErrExists) {
				fmt.Fprintf(stderr, "jobctl add: job %q is pending or running; left alone\n", j.key)
				return exitExists
			}
			if err != nil {
				fmt.Fprintf(stderr, "jobctl add: NATS at %s: %v\n", g.urls, err)
				return exitEngine
			}
			_ = out.Write(struct {
				Job string `json:"job"`
				Due int64  `json:"due"`
			}{j.key, j.due.UnixMilli()})
			return exitOK
		})
	case "cancel", "get":
		key, err := parseKeyOnly(cmd, rest, stderr)
		if err != nil {
			return fail(stderr, "jobctl "+cmd, err)
		}
		return withClient(g, stderr, dial.Within, func(ctx context.Context, c *jobs.Client) int {
			if cmd == "cancel" {
				existed, err := c.Cancel(ctx, key)
				if err != nil {
					fmt.Fprintf(stderr, "jobctl cancel: NATS at %s: %v\n", g.urls, err)
					return exitEngine
				}
				_ = out.Write(struct {
					Job       string `json:"job"`
					Cancelled bool   `json:"cancelled"`
				}{key, existed})
				return exitOK
			}
			in, err := c.Get(ctx, key)
			if err != nil {
				fmt.Fprintf(stderr, "jobctl get: NATS at %s: %v\n", g.urls, err)
				return exitEngine
			}
			_ = out.Write(infoLine(in))
			return exitOK
		})
	case "load":
		fs := flag.NewFlagSet("jobctl load", flag.ContinueOnError)
		fs.Usage = func() {
			fmt.Fprintln(fs.Output(), `usage: jobctl -nats URLS load < lines of {"job":K,"in":"D"} or {"job":K,"at":"RFC3339"}, each with an optional "payload"`)
		}
		if err := parse(fs, rest, stderr); err != nil {
			return fail(stderr, "jobctl load", err)
		}
		if fs.NArg() > 0 {
			return fail(stderr, "jobctl load", usagef("takes no flags or arguments; jobs come on stdin"))
		}
		return withClient(g, stderr, loadWithin, func(ctx context.Context, c *jobs.Client) int {
			return load(ctx, c, g.urls, stdin, out, stderr)
		})
	case "":
		fmt.Fprintln(stderr, "jobctl: no command (add, cancel, get or load)")
		return exitUsage
	default:
		fmt.Fprintf(stderr, "jobctl: unknown command %q (add, cancel, get or load)\n", cmd)
		return exitUsage
	}
}

func parseGlobal(args []string, stderr io.Writer) (g global, cmd string, rest []string, err error) {
	fs := flag.NewFlagSet("jobctl", flag.ContinueOnError)
	fs.StringVar(&g.urls, "nats", "", "comma-separated NATS URLs (required)")
	fs.StringVar(&g.queue, "queue", jobs.DefaultQueue, "the queue, [A-Za-z0-9_-]{1,64}")
	fs.IntVar(&g.replicas, "replicas", 1, "replicas of the buckets it creates, 1..5")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: jobctl -nats URLS [-queue NAME] [-replicas N] COMMAND [flags]")
		fmt.Fprintln(w, "Commands: add, cancel, get, load; 'jobctl -nats URLS COMMAND -h' lists a command's flags.")
		fs.PrintDefaults()
		fmt.Fprintln(w, "Exit status: 0 done, 1 NATS unreachable or a malformed load line, 2 bad input, 3 add -unique of a pending or running job.")
	}
	if err := parse(fs, args, stderr); err != nil {
		return g, "", nil, err
	}
	if fs.NArg() > 0 {
		cmd, rest = fs.Arg(0), fs.Args()[1:]
	}
	switch {
	case g.urls == "":
		return g, "", nil, usagef("-nats is required")
	case !jobs.ValidName(g.queue):
		return g, "", nil, usagef("-queue %q: 1 to 64 characters of [A-Za-z0-9_-]", g.queue)
	case g.replicas < 1 || g.replicas > 5:
		return g, "", nil, usagef("-replicas %d: 1 to 5", g.replicas)
	}
	return g, cmd, rest, nil
}

func checkKey(key string) error {
	switch {
	case key == "":
		return usagef("-key is required and not empty")
	case len(key) > jobs.MaxKey:
		return usagef("-key is %d bytes; at most %d", len(key), jobs.MaxKey)
	case !utf8.ValidString(key):
		return usagef("-key is not valid UTF-8")
	}
	return nil
}

func parseAdd(args []string, stderr io.Writer) (job, bool, error) {
	fs := flag.NewFlagSet("jobctl add", flag.ContinueOnError)
	key := fs.String("key", "", "the job's key: 1 to 256 bytes of UTF-8")
	in := fs.Duration("in", 0, "due this long from now (0 or negative: at once)")
	at := fs.String("at", "", "due at this RFC 3339 time (fractions of a second allowed)")
	payload := fs.String("payload", "", "the payload, at most 64 KiB")
	unique := fs.Bool("unique", false, "leave a pending or running job alone (exit 3)")
	if err := parse(fs, args, stderr); err != nil {
		return job{}, false, err
	}
	if fs.NArg() > 0 {
		return job{}, false, usagef("unexpected arguments: %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := checkKey(*key); err != nil {
		return job{}, false, err
	}
	if len(*payload) > jobs.MaxPayload {
		return job{}, false, usagef("-payload is %d bytes; at most %d", len(*payload), jobs.MaxPayload)
	}
	j := job{key: *key, payload: []byte(*payload)}
	switch {
	case set["in"] == set["at"]:
		return job{}, false, usagef("give one of -in and -at")
	case set["in"]:
		j.due = time.Now().Add(*in)
	default:
		t, err := time.Parse(time.RFC3339Nano, *at)
		if err != nil {
			return job{}, false, usagef("-at %q: not an RFC 3339 time", *at)
		}
		j.due = t
	}
	return j, *unique, nil
}

func parseKeyOnly(cmd string, args []string, stderr io.Writer) (string, error) {
	fs := flag.NewFlagSet("jobctl "+cmd, flag.ContinueOnError)
	key := fs.String("key", "", "the job's key")
	if err := parse(fs, args, stderr); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", usagef("unexpected arguments: %q", fs.Args())
	}
	return *key, checkKey(*key)
}

// loadLine is one line of load's input.
type loadLine struct {
	Job     *string `json:"job"`
	In      *string `json:"in"`
	At      *string `json:"at"`
	Payload *string `json:"payload"`
}

// load adds each line of stdin as it reads it, through a Loader that
// keeps a bounded number of adds in flight, so that neither the wait for
// the first add nor the memory grows with the input. It names each
// malformed line on stderr, skips it and exits 1 after adding the others;
// it prints {"added":N} once every add is answered.
func load(ctx context.Context, c *jobs.Client, urls string, stdin io.Reader, out *jsonl.Writer, stderr io.Writer) int {
	l := c.NewLoader()
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 4*jobs.MaxPayload)
	bad := false
	n, added := 0, 0
	for sc.Scan() {
		n++
		// "in" counts from the moment its line is read.
		j, err := parseLine(sc.Bytes(), time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "jobctl load: line %d: %v\n", n, err)
			bad = true
			continue
		}
		if err := l.Add(ctx, j.key, j.due, j.payload); err != nil {
			fmt.Fprintf(stderr, "jobctl load: line %d: NATS at %s: %v\n", n, urls, err)
			_, _ = l.Wait(ctx)
			return exitEngine
		}
		added++
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "jobctl load: line %d: %v\n", n+1, err)
		bad = true
	}
	failed, err := l.Wait(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "jobctl load: %d adds failed; NATS at %s: %v\n", failed, urls, err)
		return exitEngine
	}
	_ = out.Write(struct {
		Added int `json:"added"`
	}{added})
	if bad {
		return exitEngine
	}
	return exitOK
}

func parseLine(b []byte, now time.Time) (job, error) {
	if !utf8.Valid(b) {
		return job{}, errors.New("not valid UTF-8")
	}
	var l loadLine
	if err := json.Unmarshal(b, &l); err != nil {
		return job{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if l.Job == nil {
		return job{}, errors.New(`no "job"`)
	}
	if err := checkKey(*l.Job); err != nil {
		return job{}, fmt.Errorf("job: %v", err)
	}
	j := job{key: *l.Job}
	if l.Payload != nil {
		if len(*l.Payload) > jobs.MaxPayload {
			return job{}, fmt.Errorf("payload is %d bytes; at most %d", len(*l.Payload), jobs.MaxPayload)
		}
		j.payload = []byte(*l.Payload)
	}
	switch {
	case (l.In == nil) == (l.At == nil):
		return job{}, errors.New(`give one of "in" and "at"`)
	case l.In != nil:
		d, err := time.ParseDuration(*l.In)
		if err != nil {
			return job{}, fmt.Errorf("in %q: not a duration", *l.In)
		}
		j.due = now.Add(d)
	default:
		t, err := time.Parse(time.RFC3339Nano, *l.At)
		if err != nil {
			return job{}, fmt.Errorf("at %q: not an RFC 3339 time", *l.At)
		}
		j.due = t
	}
	return j, nil
}

// withClient connects to the engine and runs fn with a client; an engine
// it cannot reach within bound exits 1, naming the URLs.
func withClient(g global, stderr io.Writer, bound time.Duration, fn func(context.Context, *jobs.Client) int) int {
	started := time.Now()
	nc, err := nats.Connect(g.urls, nats.Timeout(dial.Timeout(g.urls)))
	if err != nil {
		fmt.Fprintf(stderr, "jobctl: cannot reach NATS at %s: %v\n", g.urls, err)
		return exitEngine
	}
	defer nc.Close()
	ctx, cancel := context.WithDeadline(context.Background(), started.Add(bound))
	defer cancel()
	octx, ocancel := context.WithDeadline(ctx, started.Add(dial.Within))
	defer ocancel()
	c, err := jobs.Open(octx, nc, jobs.Config{Queue: g.queue, Replicas: g.replicas})
	if err != nil {
		fmt.Fprintf(stderr, "jobctl: NATS at %s: %v\n", g.urls, err)
		return exitEngine
	}
	return fn(ctx, c)
}

// infoLineT is get's output.
type infoLineT struct {
	Job     string `json:"job"`
	State   string `json:"state"`
	Due     *int64 `json:"due,omitempty"`
	Attempt *int   `json:"attempt,omitempty"`
}

func infoLine(in jobs.Info) infoLineT {
	l := infoLineT{Job: in.Key, State: string(in.State)}
	if in.State == jobs.StateUnknown {
		return l
	}
	a := in.Attempt
	l.Attempt = &a
	if in.State != jobs.StateDead {
		d := in.Due.UnixMilli()
		l.Due = &d
	}
	return l
}
