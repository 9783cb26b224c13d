package schedule_test

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/internal/schedtest"
	"github.com/go-schedule/schedule/lazycancel"
)

// Tests of the constructors and of the options' arguments.

func TestNewRejectsNonPositiveWorkers(t *testing.T) {
	for _, st := range schedtest.Strategies {
		for _, workers := range []int{0, -1, math.MinInt} {
			s, err := st.New(workers)
			assert.ErrorIs(t, err, schedule.ErrInvalidWorkers, "%v workers=%d", st, workers)
			assert.Nil(t, s)
		}
	}
}

// A worker count whose pool size (workers plus the idle spares) overflows
// an int would reach ants as a negative size, which it takes for an
// unbounded pool.
func TestNewRejectsWorkersWhosePoolSizeOverflows(t *testing.T) {
	for _, st := range schedtest.Strategies {
		for _, workers := range []int{math.MaxInt, math.MaxInt - 1} {
			s, err := st.New(workers)
			assert.ErrorIs(t, err, schedule.ErrInvalidWorkers, "%v workers=%d", st, workers)
			assert.Nil(t, s)
		}
	}
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	cases := map[string]struct {
		opt  schedule.Option
		want error
	}{
		"nil pool":         {schedule.WithPool(nil), schedule.ErrNilPool},
		"nil logger":       {schedule.WithLogger(nil), schedule.ErrNilLogger},
		"unknown strategy": {schedule.WithCancelStrategy(0), schedule.ErrUnknownStrategy},
		"strategy 9":       {schedule.WithCancelStrategy(9), schedule.ErrUnknownStrategy},
	}
	for _, st := range schedtest.Strategies {
		for name, c := range cases {
			t.Run(st.String()+"/"+name, func(t *testing.T) {
				s, err := st.New(1, c.opt)
				assert.ErrorIs(t, err, c.want)
				assert.Nil(t, s)
			})
		}
	}
}

// TestConstructorsSelectTheirStrategy is the one test of schedule.New
// without options: it selects lazy cancel, so the harness leaves it out of
// the strategies every other test runs on.
func TestConstructorsSelectTheirStrategy(t *testing.T) {
	s, err := schedule.New(1)
	require.NoError(t, err)
	assert.Equal(t, schedule.LazyCancel, schedule.CancelStrategyOf(s), "schedule.New")
	s.Shutdown()

	for _, st := range schedtest.Strategies {
		s, err := st.New(1)
		require.NoError(t, err)
		assert.Equal(t, st.Kind, schedule.CancelStrategyOf(s), st.String())
		s.Shutdown()
	}

	// The strategy packages win over an option asking for the other one.
	s, err = lazycancel.New(1, schedule.WithCancelStrategy(schedule.EagerCancel))
	require.NoError(t, err)
	assert.Equal(t, schedule.LazyCancel, schedule.CancelStrategyOf(s))
	s.Shutdown()
}

// Goroutines building schedulers from one options slice that has spare
// capacity must not race (the race detector fails the test), and the
// slice keeps its length.
func TestStrategyConstructorsDoNotWriteTheCallersOptions(t *testing.T) {
	for _, st := range schedtest.Strategies {
		t.Run(st.String(), func(t *testing.T) {
			opts := make([]schedule.Option, 1, 8)
			opts[0] = schedule.WithPanicHandler(func(schedule.TaskID, any) {})
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 50 {
						s, err := st.New(1, opts...)
						if assert.NoError(t, err) {
							s.Shutdown()
						}
					}
				})
			}
			wg.Wait()
			assert.Len(t, opts, 1)
		})
	}
}
