package main

import (
	"errors"
	"io"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// The two servers.
const (
	modeWrapped = "netdeadline" // on netdeadline.NewListener
	modePlain   = "runtime"     // on the plain listener: the baseline
)

// config is a run's.
type config struct {
	Conns       int
	Every       time.Duration // each connection's request period
	Window      time.Duration // measured, per server and round
	Rounds      int
	ReadTimeout time.Duration
	IdleTimeout time.Duration
	Workers     int
	Dialers     int
}

func parseFlags(args []string, output io.Writer) (config, error) {
	c := config{Conns: 2000, Every: time.Second, Window: 20 * time.Second, Rounds: 2,
		ReadTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second, Workers: 4, Dialers: 64}
	fs := loadtest.NewFlagSet("httpload", output,
		"Compares a net/http server on a netdeadline listener with the same server on a plain",
		"listener: keep-alive connections sending a small request each period.")
	fs.IntVar(&c.Conns, "conns", c.Conns, "keep-alive connections")
	fs.DurationVar(&c.Every, "every", c.Every, "each connection sends a request every `period`")
	fs.DurationVar(&c.Window, "window", c.Window, "measured window, per server and round")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds; each runs both servers, in alternating order")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", c.ReadTimeout, "the server's ReadTimeout")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "the server's IdleTimeout")
	fs.IntVar(&c.Workers, "workers", c.Workers, "go-schedule's pool size in the wrapped server")
	fs.IntVar(&c.Dialers, "dialers", c.Dialers, "connections opened at once")
	if err := loadtest.Parse(fs, args); err != nil {
		return c, err
	}
	switch {
	case c.Conns <= 0 || c.Rounds <= 0 || c.Workers <= 0 || c.Dialers <= 0:
		return c, errors.New("-conns, -rounds, -workers and -dialers must be positive")
	case c.Every <= 0 || c.Window <= 0 || c.ReadTimeout <= 0 || c.IdleTimeout <= 0:
		return c, errors.New("-every, -window, -read-timeout and -idle-timeout must be positive")
	case c.Every >= c.IdleTimeout:
		return c, errors.New("-every must be shorter than -idle-timeout, or the server closes idle connections")
	}
	if lim, ok := loadtest.OpenFileLimit(); ok && c.Conns+loadtest.FileMargin > int(lim) {
		return c, errors.New("-conns exceeds the open files a process may hold (ulimit -n)")
	}
	return c, nil
}
