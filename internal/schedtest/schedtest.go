// Package schedtest is the test harness of this module: the list of the two
// cancel strategies, each built through its own package
// ([github.com/go-schedule/schedule/lazycancel.New],
// [github.com/go-schedule/schedule/eagercancel.New]), and the functions
// that run a test once per strategy.
//
// Tests that depend on time run inside a fresh [testing/synctest] bubble per
// strategy, where the clock is fake and moves only when every goroutine of
// the bubble is blocked: "at its deadline" then means at exactly that
// instant. Tests that need real time or real concurrency range over
// [Strategies] themselves and build their schedulers with [Strategy.Start].
//
// The default constructor, [schedule.New], is not in the list: it builds a
// LazyCancel scheduler, and running every test on it too would run the lazy
// strategy twice.
package schedtest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/lazycancel"
)

// Strategy is one cancel strategy and the constructor of its package.
type Strategy struct {
	// Kind is the strategy the constructor selects.
	Kind schedule.CancelStrategy
	// New is lazycancel.New or eagercancel.New.
	New func(workers int, opts ...schedule.Option) (*schedule.Scheduler, error)
}

// String returns the strategy's name, "lazy" or "eager", which names the
// subtests the harness runs.
func (st Strategy) String() string { return st.Kind.String() }

// Strategies lists the two cancel strategies, lazy first.
var Strategies = []Strategy{
	{schedule.LazyCancel, lazycancel.New},
	{schedule.EagerCancel, eagercancel.New},
}

// shutdownWait bounds how long the cleanup that Start registers waits for
// a scheduler's jobs and pool: far longer than any test job runs, so that
// only a job that never returns makes the cleanup fail.
const shutdownWait = time.Minute

// Start builds a scheduler of strategy st with at most workers jobs
// running at once, failing t at once if the constructor returns an error,
// and shuts it down when t ends (see Shutdown). Inside a synctest bubble it
// must be called from the bubble, so that the scheduler's goroutines and
// pool belong to it.
func (st Strategy) Start(t testing.TB, workers int, opts ...schedule.Option) *schedule.Scheduler {
	t.Helper()
	s, err := st.New(workers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { Shutdown(t, s) })
	return s
}

// EachStrategy runs f once per strategy, each time in a subtest of its own
// (named after the strategy) inside a fresh synctest bubble, with a
// scheduler of that strategy made by Start inside the bubble. The
// scheduler is shut down, and its pool's goroutines have exited, before the
// bubble ends.
func EachStrategy(t *testing.T, workers int, f func(t *testing.T, s *schedule.Scheduler), opts ...schedule.Option) {
	t.Helper()
	EachStrategyBubble(t, func(t *testing.T, st Strategy) {
		f(t, st.Start(t, workers, opts...))
	})
}

// EachStrategyBubble runs f once per strategy, each time in a subtest of
// its own inside a fresh synctest bubble, and leaves building the
// scheduler to f: for tests that need something made inside the bubble
// first (a pool for schedule.WithPool) or several schedulers. Whatever f
// starts must have ended when it returns, or the bubble reports a
// deadlock; Start's cleanup sees to the scheduler's part.
func EachStrategyBubble(t *testing.T, f func(t *testing.T, st Strategy)) {
	t.Helper()
	for _, st := range Strategies {
		t.Run(st.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { f(t, st) })
		})
	}
}

// Shutdown shuts s down and waits for its running jobs and, for a pool s
// made itself, for the pool's goroutines; it fails t if they take longer
// than a minute.
func Shutdown(t testing.TB, s *schedule.Scheduler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	assert.NoError(t, s.ShutdownContext(ctx))
}

// Advance moves a bubble's fake clock forward by d and waits until every
// goroutine of the bubble is blocked again: the scheduler and its workers
// have then done everything that was due by the new instant. It must be
// called from inside a synctest bubble.
func Advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}
