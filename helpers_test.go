package schedule_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-schedule/schedule"
)

// Helpers shared by the black-box tests. The strategies and the harness
// that runs a test once per strategy are in internal/schedtest.

func nop() {}

// settledStats returns s.Stats() once the owner has applied every request,
// in a synctest bubble: the owner leaves requests for deadlines after its
// next wake-up until then, and a first Stats call has it apply them.
func settledStats(s *schedule.Scheduler) schedule.Stats {
	synctest.Wait()
	s.Stats()
	synctest.Wait()
	return s.Stats()
}

// recorder is a job that notes the fake time of each run, relative to the
// moment the recorder was made.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	runs  []time.Duration
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) job() {
	r.mu.Lock()
	r.runs = append(r.runs, time.Since(r.start))
	r.mu.Unlock()
}

func (r *recorder) times() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.runs...)
}

// blockingJob returns a job that blocks until release is called, and
// release. Release also runs when the test ends, before the cleanups
// registered earlier (the scheduler's shutdown among them), so that a
// failing test does not hang.
func blockingJob(t *testing.T) (job func(), release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return func() { <-ch }, release
}
