package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// LoadConfig is what the parent tells every load process on its command
// line, besides what its command adds (the clients' timing).
type LoadConfig struct {
	Index   int      // which load process of the run, from 0
	Servers []string // the servers' addresses
	Live    int      // clients that keep sending
	Silent  int      // clients that fall silent
	// Fall is the window after the start in which silent clients fall
	// silent, and Grace the wait after the last one's deadline.
	Fall, Grace time.Duration
	Source      string // IP address to dial from, or "" for any
	Dialers     int    // connections opened at once
	Seed        uint64
}

// Register defines c's flags in fs, for a child that parses them.
func (c *LoadConfig) Register(fs *flag.FlagSet) {
	fs.IntVar(&c.Index, "index", 0, "loader: index of this load process")
	fs.Func("server", "loader: a server address (repeated)", func(s string) error {
		c.Servers = append(c.Servers, s)
		return nil
	})
	fs.IntVar(&c.Live, "live", 0, "loader: clients that keep sending")
	fs.IntVar(&c.Silent, "silent", 0, "loader: clients that fall silent")
	fs.DurationVar(&c.Fall, "fall", 0, "loader: window in which silent clients fall silent")
	fs.DurationVar(&c.Grace, "grace", 0, "loader: wait after the last deadline")
	fs.StringVar(&c.Source, "source", "", "loader: source address to dial from")
	fs.IntVar(&c.Dialers, "dialers", 64, "loader: connections opened at once")
	fs.Uint64Var(&c.Seed, "seed", 1, "loader: seed")
}

// Args returns the command-line arguments that Register parses back into c.
func (c LoadConfig) Args() []string {
	args := []string{"-index", strconv.Itoa(c.Index),
		"-live", strconv.Itoa(c.Live), "-silent", strconv.Itoa(c.Silent),
		"-fall", c.Fall.String(), "-grace", c.Grace.String(),
		"-source", c.Source, "-dialers", strconv.Itoa(c.Dialers),
		"-seed", strconv.FormatUint(c.Seed, 10)}
	for _, s := range c.Servers {
		args = append(args, "-server", s)
	}
	return args
}

// ClientCounts are a load process's counts of its clients, or their sums.
type ClientCounts struct {
	LiveConnected   int64 `json:"live_connected"`
	SilentConnected int64 `json:"silent_connected"`
	Failed          int64 `json:"failed"` // connections that could not be made
	// Silent clients that a server disconnected after they fell silent,
	// and those it disconnected before, while they still sent.
	SilentClosed    int64 `json:"silent_closed"`
	SilentLostEarly int64 `json:"silent_lost_early"`
	LiveLost        int64 `json:"live_lost"` // live clients a server disconnected
	// Silent clients disconnected less than the timeout after their last
	// write (included in SilentClosed).
	Early int64 `json:"early"`
}

// Add adds o's counts to c's.
func (c *ClientCounts) Add(o ClientCounts) {
	c.LiveConnected += o.LiveConnected
	c.SilentConnected += o.SilentConnected
	c.Failed += o.Failed
	c.SilentClosed += o.SilentClosed
	c.SilentLostEarly += o.SilentLostEarly
	c.LiveLost += o.LiveLost
	c.Early += o.Early
}

// LoadResult is what a load process reports at the end of the window.
type LoadResult struct {
	ClientCounts
	// Lateness of each disconnected silent client, in microseconds: from
	// its last write plus the timeout to the end of its connection, as the
	// client saw it.
	Lateness []int64 `json:"lateness_us"`
	// WillLateness, for a command whose load processes watch what the
	// servers publish when a silent client is disconnected (an MQTT will),
	// has one entry per such message received, in microseconds: from the
	// client's last write plus the timeout to the message's arrival.
	WillLateness []int64 `json:"will_lateness_us,omitempty"`
	// LastWrites, for a command whose servers report when they gave up each
	// silent client, has every silent client's last write before it fell
	// silent, by the client's name, as wall-clock time in Unix nanoseconds:
	// the servers, on the same machine, read the same clock (see
	// Loader.FellSilent).
	LastWrites map[string]int64 `json:"last_writes_ns,omitempty"`
	// Errors is a sample of what went wrong.
	Errors []string `json:"errors,omitempty"`
}

// MergeLoads returns the results of a run's load processes as one: the
// counts summed, every lateness in one sorted slice, every last write in
// one map (the clients' names differ between processes), and the errors in
// the processes' order.
func MergeLoads(rs []LoadResult) LoadResult {
	var m LoadResult
	for _, r := range rs {
		m.Add(r.ClientCounts)
		m.Lateness = append(m.Lateness, r.Lateness...)
		m.WillLateness = append(m.WillLateness, r.WillLateness...)
		if len(r.LastWrites) > 0 && m.LastWrites == nil {
			m.LastWrites = make(map[string]int64)
		}
		maps.Copy(m.LastWrites, r.LastWrites)
		m.Errors = append(m.Errors, r.Errors...)
	}
	slices.Sort(m.Lateness)
	slices.Sort(m.WillLateness)
	return m
}

// Lateness collects latenesses, in microseconds. It is safe for concurrent
// use, and its zero value is empty and ready to use.
type Lateness struct {
	mu sync.Mutex
	us []int64
}

// Add adds d, truncated to a whole microsecond.
func (l *Lateness) Add(d time.Duration) {
	l.mu.Lock()
	l.us = append(l.us, d.Microseconds())
	l.mu.Unlock()
}

// Micros returns a copy of the latenesses so far, in microseconds, in the
// order they were added.
func (l *Lateness) Micros() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.us...)
}

// The limits of a load process.
const (
	// ProgressEvery is how often a load process reports its counts to the
	// parent, which prints them every tickEvery: often enough that every
	// line the parent prints is fresh.
	ProgressEvery = 500 * time.Millisecond
	// DialTimeout bounds a connection attempt: generous, because a server
	// accepting thousands of connections at once falls behind.
	DialTimeout = time.Minute
	// closeWaitMargin is how long after the window's end a silent client
	// still waits for the server to close its connection: a close that
	// late is no longer a lateness but a failure, counted as not closed.
	closeWaitMargin = time.Minute
	// maxErrors is how many errors a load process keeps to report: enough
	// to tell what went wrong, few enough that a run in which every
	// connection fails does not flood the report.
	maxErrors = 5
)

// Loader is a load process's state, shared by its clients. Its counters
// are the clients' to add to; its methods are safe for concurrent use.
type Loader struct {
	Config LoadConfig
	// Timeout is how long a client may stay silent before the server must
	// close its connection.
	Timeout time.Duration
	// Dialer dials from Config.Source, within DialTimeout.
	Dialer *net.Dialer

	// The counts of ClientCounts, as the clients make them.
	LiveConnected, SilentConnected, Failed         atomic.Int64
	SilentClosed, SilentLostEarly, LiveLost, Early atomic.Int64

	lateness   Lateness // of the silent clients' disconnections
	wills      Lateness // of their wills' arrivals (WillArrived)
	mu         sync.Mutex
	errors     []string
	lastWrites map[string]int64 // FellSilent's, in Unix nanoseconds

	started chan struct{} // closed when the window starts
	start   time.Time     // when it started; read once started is closed
}

// NewLoader returns the state of a load process of configuration c, whose
// servers close a connection silent for timeout. c must name at least one
// server, and its Source must be empty or an IP address.
func NewLoader(c LoadConfig, timeout time.Duration) (*Loader, error) {
	if len(c.Servers) == 0 {
		return nil, errors.New("no -server")
	}
	d := &net.Dialer{Timeout: DialTimeout}
	if c.Source != "" {
		ip := net.ParseIP(c.Source)
		if ip == nil {
			return nil, fmt.Errorf("-source %q is not an IP address", c.Source)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	return &Loader{Config: c, Timeout: timeout, Dialer: d, started: make(chan struct{})}, nil
}

// Server returns the address client k dials. Each load process starts at a
// server of its own, so that a run with as many load processes as servers
// gives each server its share even when every process has fewer clients
// than there are servers.
func (l *Loader) Server(k int) string {
	return l.Config.Servers[(k+l.Config.Index)%len(l.Config.Servers)]
}

// Window returns the measured window's length: the silent clients fall
// silent within Fall, a server must close each a Timeout after its last
// write, and Grace leaves room for lateness.
func (l *Loader) Window() time.Duration { return l.Config.Fall + l.Timeout + l.Config.Grace }

// Started is closed when the window starts.
func (l *Loader) Started() <-chan struct{} { return l.started }

// Start returns when the window started. Only call it once Started is
// closed.
func (l *Loader) Start() time.Time { return l.start }

// SilentDeadline returns how long a client that has fallen silent waits
// for the server to close its connection: until well after the window's
// end. A connection still open then counts as not closed.
func (l *Loader) SilentDeadline() time.Time {
	return time.Now().Add(l.Window() + closeWaitMargin)
}

// Note keeps the first few errors for the result.
func (l *Loader) Note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errors) < maxErrors {
		l.errors = append(l.errors, fmt.Sprintf(format, args...))
	}
}

// Closed counts a silent client whose connection the server closed took
// after the client's last write. It keeps how late that was, past Timeout,
// and reports whether it was early, before Timeout (counted in Early too).
func (l *Loader) Closed(took time.Duration) (early bool) {
	l.SilentClosed.Add(1)
	early = took < l.Timeout
	if early {
		l.Early.Add(1)
	}
	l.lateness.Add(took - l.Timeout)
	return early
}

// WillArrived records that the message a server publishes for a
// disconnected silent client (its will) arrived took after the client's
// last write: how late that was, past Timeout (see LoadResult.WillLateness).
func (l *Loader) WillArrived(took time.Duration) { l.wills.Add(took - l.Timeout) }

// FellSilent records that the silent client name fell silent, its last
// write at last: the moment, on the wall clock that every process on the
// machine shares, from which a server may report how late it gave the
// client up (see LoadResult.LastWrites). A second call for the same name
// replaces the first.
func (l *Loader) FellSilent(name string, last time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastWrites == nil {
		l.lastWrites = make(map[string]int64)
	}
	l.lastWrites[name] = last.UnixNano()
}

// Counts returns the counts so far.
func (l *Loader) Counts() ClientCounts {
	return ClientCounts{
		LiveConnected:   l.LiveConnected.Load(),
		SilentConnected: l.SilentConnected.Load(),
		Failed:          l.Failed.Load(),
		SilentClosed:    l.SilentClosed.Load(),
		SilentLostEarly: l.SilentLostEarly.Load(),
		LiveLost:        l.LiveLost.Load(),
		Early:           l.Early.Load(),
	}
}

// Result returns the counts, latenesses, last writes and errors so far.
func (l *Loader) Result() LoadResult {
	res := LoadResult{ClientCounts: l.Counts(), Lateness: l.lateness.Micros(), WillLateness: l.wills.Micros()}
	l.mu.Lock()
	res.Errors = append([]string(nil), l.errors...)
	res.LastWrites = maps.Clone(l.lastWrites)
	l.mu.Unlock()
	return res
}

// RunLoader runs a load process's part of the protocol. It reports l's
// counts every ProgressEvery; calls connect for every client, numbered from
// 0, the Config.Live live ones first and then the Config.Silent silent
// ones, on Config.Dialers goroutines at once, and reports connected once
// every call has returned; starts the window when the parent says go;
// reports its result when the window is over; and returns at the end of
// standard input, leaving the connections for the system to close.
//
// connect must count the client as connected or failed; a client it
// starts goes on in goroutines of its own, which watch l.Started. RunLoader
// returns nil if the parent ends standard input before go, and ctx.Err()
// if ctx ends first.
func RunLoader[S any](ctx context.Context, l *Loader, out *Emitter[S], cmds <-chan string, connect func(k int)) error {
	var progress sync.WaitGroup
	progressDone := make(chan struct{})
	defer progress.Wait()
	defer close(progressDone)
	progress.Go(func() {
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-t.C:
				p := l.Counts()
				out.Emit(Message[S]{Event: EventProgress, Progress: &p})
			}
		}
	})

	if err := dialAll(ctx, l.Config.Live+l.Config.Silent, l.Config.Dialers, connect); err != nil {
		return err
	}
	p := l.Counts()
	out.Emit(Message[S]{Event: EventConnected, Progress: &p})

	for cmd := range cmds {
		if cmd == CmdGo {
			l.start = time.Now()
			close(l.started)
			break
		}
	}
	select {
	case <-l.started:
	default:
		return nil // the parent gave up
	}
	end := time.NewTimer(time.Until(l.start.Add(l.Window())))
	defer end.Stop()
	select {
	case <-end.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	res := l.Result()
	out.Emit(Message[S]{Event: EventResult, Loader: &res})
	for range cmds { // until the end of standard input
	}
	return nil
}

// dialAll calls connect(k) for every k from 0 to n-1, on dialers goroutines
// at once. If ctx ends first, it waits for the calls under way and returns
// ctx.Err().
func dialAll(ctx context.Context, n, dialers int, connect func(k int)) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(dialers, 1) {
		wg.Go(func() {
			for k := range jobs {
				connect(k)
			}
		})
	}
	defer wg.Wait()
	defer close(jobs)
	for k := range n {
		select {
		case jobs <- k:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
