package loadtest

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Measurement is one set of server processes and their load processes,
// which Measure runs through one window.
type Measurement[S any] struct {
	// Servers is how many server processes to start, ServerName what to
	// call each in errors ("broker" makes "broker 0"), and ServerArgs the
	// arguments of server i (see ServerConfig.Args).
	Servers    int
	ServerName string
	ServerArgs func(i int) []string
	// Loaders is how many load processes to start, and Load what they are
	// told in all: load process i gets its Share of Load.Live and
	// Load.Silent, every server's address, its Index, and the Source i in
	// Net. LoaderArgs are the command's own arguments for every one.
	Loaders    int
	Load       LoadConfig
	Net        Loopback
	LoaderArgs []string
	// Timeout is how long the servers let a connection stay silent: the
	// window lasts Load.Fall + Timeout + Load.Grace.
	Timeout time.Duration

	// Stderr receives the children's standard error and the lines of
	// progress, which start with [Tag]. It must be safe for concurrent use
	// (see LockedWriter): os/exec copies to it from goroutines of its own.
	Stderr io.Writer
	Tag    string
	// LiveName is what the progress calls the live clients ("paho
	// clients").
	LiveName string
	// Connecting and InWindow return the line of progress logged every
	// tickEvery while the clients connect, and in the window, given the
	// sum of the load processes' latest counts and the time since that
	// phase began.
	Connecting, InWindow func(sum ClientCounts, since time.Duration) string
	// Connected, if not nil, is called once every client is connected,
	// before the window starts: a run that starts several measurements'
	// windows together waits there for the others.
	Connected func(ctx context.Context, connectTime time.Duration) error
}

// Result is what Measure found.
type Result[S any] struct {
	// ConnectTime is how long connecting every client took.
	ConnectTime time.Duration
	// The servers' and the load processes' results, in their order.
	Servers []S
	Loaders []LoadResult
	Lifetime
}

// Measure runs m: it starts the server processes, then the load
// processes, which connect their clients; starts the window; collects the
// load processes' results at its end and then the servers'; and finishes
// the load processes and then the servers. It logs its progress to
// m.Stderr. On an error it returns at once, and ends every child still
// running.
func Measure[S any](ctx context.Context, m Measurement[S]) (res Result[S], err error) {
	// Ending ctx kills the children that are still running.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logf := Logger(m.Stderr, m.Tag)

	// Servers first: the load processes need their addresses.
	servers := make(Group[S], m.Servers)
	for i := range servers {
		if servers[i], err = Start[S](ctx, fmt.Sprintf("%s %d", m.ServerName, i), RoleServer, m.ServerArgs(i), m.Stderr); err != nil {
			return res, err
		}
	}
	ready, err := servers.Expect(ctx, EventReady)
	if err != nil {
		return res, err
	}
	var addrs []string
	for _, r := range ready {
		addrs = append(addrs, r.Addr)
	}

	loaders := make(Group[S], m.Loaders)
	for i := range loaders {
		lc := m.Load
		lc.Index, lc.Servers, lc.Source = i, addrs, m.Net.Source(i)
		lc.Live, lc.Silent = Share(m.Load.Live, m.Loaders, i), Share(m.Load.Silent, m.Loaders, i)
		args := append(lc.Args(), m.LoaderArgs...)
		if loaders[i], err = Start[S](ctx, fmt.Sprintf("load process %d", i), RoleLoader, args, m.Stderr); err != nil {
			return res, err
		}
	}
	logf("%s, %s: connecting %s %s and %s that will fall silent",
		Plural(m.Servers, m.ServerName+" process", m.ServerName+" processes"), Plural(m.Loaders, "load process", "load processes"),
		Commas(int64(m.Load.Live)), m.LiveName, Commas(int64(m.Load.Silent)))

	start := time.Now()
	if _, err := loaders.Collect(ctx, EventConnected, func() {
		logf("%s", m.Connecting(loaders.Progress(), time.Since(start)))
	}); err != nil {
		return res, err
	}
	res.ConnectTime = time.Since(start)
	if m.Connected != nil {
		if err := m.Connected(ctx, res.ConnectTime); err != nil {
			return res, err
		}
	}

	if err := servers.Send(CmdGo); err != nil {
		return res, err
	}
	if err := loaders.Send(CmdGo); err != nil {
		return res, err
	}
	wstart := time.Now()
	logf("all connected in %v; window of %v (fall %v + timeout %v + grace %v)",
		res.ConnectTime.Round(time.Millisecond), m.Load.Fall+m.Timeout+m.Load.Grace, m.Load.Fall, m.Timeout, m.Load.Grace)
	results, err := loaders.Collect(ctx, EventResult, func() {
		logf("%s", m.InWindow(loaders.Progress(), time.Since(wstart)))
	})
	if err != nil {
		return res, err
	}
	for i, r := range results {
		if r.Loader == nil {
			return res, fmt.Errorf("%s sent an empty result", loaders[i].Name())
		}
		res.Loaders = append(res.Loaders, *r.Loader)
	}
	if results, err = servers.Ask(ctx, CmdReport, EventResult); err != nil {
		return res, err
	}
	for i, r := range results {
		if r.Server == nil {
			return res, fmt.Errorf("%s sent an empty result", servers[i].Name())
		}
		res.Servers = append(res.Servers, *r.Server)
	}

	// Tear down: the load processes leave, then the servers close.
	logf("closing")
	if res.LoaderCPU, res.LoaderPeak, err = loaders.Finish(ctx); err != nil {
		return res, err
	}
	if res.ServerCPU, res.ServerPeak, err = servers.Finish(ctx); err != nil {
		return res, err
	}
	logf("done in %v", time.Since(start).Round(time.Second))
	return res, nil
}

// Logger returns a function that writes a line of progress to w, in the
// manner of fmt.Printf, starting with [tag].
func Logger(w io.Writer, tag string) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, "[%s] "+format+"\n", append([]any{tag}, args...)...)
	}
}
