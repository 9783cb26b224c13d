package main

import (
	"errors"
	"strings"
	"time"

	"github.com/go-schedule/schedule/presence"
)

// config is what the flags say.
type config struct {
	devices, gateways, reps     int
	lease, timeout, beat, quiet time.Duration
	kill                        bool
	modes                       string
	cpuprofile                  string // prefix of the gateways' profiles; empty: none
}

func (c config) validate() error {
	switch {
	case c.devices < 1:
		return errors.New("-devices must be at least 1")
	case c.gateways < 2:
		return errors.New("-gateways must be at least 2: one is killed, another records it")
	case (c.devices+c.gateways-1)/c.gateways > perProcess:
		return errors.New("more than 19,980 devices per gateway: this machine allows 20,000 open files per process")
	case !presence.ValidLease(c.lease):
		return presence.ErrInvalidLease
	case c.timeout <= 0 || c.beat <= 0 || c.quiet <= 0 || c.reps < 1:
		return errors.New("-timeout, -beat, -quiet and -reps must be positive")
	case c.beat >= c.timeout:
		return errors.New("-beat must be shorter than -timeout")
	case len(c.modeList()) == 0:
		return errors.New("-modes: on, off, or on,off")
	}
	return nil
}

func (c config) modeList() []bool {
	var out []bool
	for _, m := range strings.Split(c.modes, ",") {
		switch m {
		case "on":
			out = append(out, true)
		case "off":
			out = append(out, false)
		}
	}
	return out
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
