package main

import (
	"fmt"
	"sort"
	"time"
)

// Timers is the small adapter every implementation under test is put
// behind. Timers are addressed by a dense index chosen by the workload, so
// that each adapter keeps its own handles (a TaskID, a *time.Timer, ...) in
// a slice sized once by Prepare, outside the measured region.
//
// Add, Cancel and Reset may be called concurrently for different indexes.
type Timers interface {
	// Prepare sizes the handle storage for indexes 0..n-1.
	Prepare(n int)
	// Add arms timer i to run f once, d from now.
	Add(i int, d time.Duration, f func()) error
	// Cancel stops timer i. It reports whether the implementation said the
	// timer was stopped.
	Cancel(i int) bool
	// Reset re-arms pending timer i to d from now through the
	// implementation's native re-arm call. Adapters whose library has none
	// return errNoReset.
	Reset(i int, d time.Duration) error
	// Settle waits until every Add, Cancel and Reset issued so far has been
	// applied by the implementation, live being the number of timers that
	// should then be pending. Synchronous implementations return at once.
	Settle(live int) error
	// Close stops the implementation and releases its goroutines.
	Close()
}

// errNoReset is returned by adapters whose library has no re-arm call.
var errNoReset = fmt.Errorf("no native reset/move call in this library")

// impl describes one implementation under test.
type impl struct {
	// Name identifies the implementation on the command line and in output.
	Name string
	// Label is the human-readable name used in tables and charts.
	Label string
	// Tick is the wheel's tick, which bounds its precision; 0 for
	// implementations that fire at the exact deadline.
	Tick time.Duration
	// ResetCall names the native re-arm call, or "" when there is none.
	ResetCall string
	// CancelAdd names the calls used for the cancel+add path.
	CancelAdd string
	// Handle is what a caller must keep per timer to cancel or re-arm it
	// later, as the adapter keeps it (its bytes are counted in the memory
	// figures).
	Handle string
	// New builds a running instance whose jobs run on at most workers
	// goroutines, for implementations that have a pool.
	New func(workers int) (Timers, error)
}

var registry = map[string]impl{}

// register adds an implementation to the registry; called from init
// functions of the adapter files.
func register(i impl) {
	if _, dup := registry[i.Name]; dup {
		panic("duplicate implementation " + i.Name)
	}
	registry[i.Name] = i
}

// implOrder is the order in which implementations run and are reported;
// the Go runtime comes first because every ratio refers to it.
var implOrder = []string{
	"runtime", "lazycancel", "eagercancel", "runtime-ants",
	"russellluo", "gozero", "gozero-1s", "antlabs",
}

// baselineImpl is the implementation every ratio is taken against.
const baselineImpl = "runtime"

// implNames returns the registered names in report order, followed by any
// registered name missing from implOrder.
func implNames() []string {
	seen := map[string]bool{}
	var names []string
	for _, n := range implOrder {
		if _, ok := registry[n]; ok {
			names = append(names, n)
			seen[n] = true
		}
	}
	var rest []string
	for n := range registry {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// wheelNames returns the registered implementations that tick, in report
// order.
func wheelNames() []string {
	var out []string
	for _, n := range implNames() {
		if registry[n].Tick > 0 {
			out = append(out, n)
		}
	}
	return out
}

// tickText renders an implementation's tick for the tables.
func tickText(d time.Duration) string {
	if d == 0 {
		return "exact"
	}
	return d.String()
}
