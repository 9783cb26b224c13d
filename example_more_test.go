package schedule_test

import (
	"context"
	"fmt"
	"time"

	"github.com/panjf2000/ants/v2"

	"github.com/go-schedule/schedule"
)

// device is per-task data: one job function serves every device, and each
// task carries its own *device, so scheduling allocates no closure.
type device struct{ name string }

func ExampleScheduler_ScheduleOneWith() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	done := make(chan schedule.TaskID)
	timedOut := func(id schedule.TaskID, arg any) {
		fmt.Println(arg.(*device).name, "timed out")
		done <- id
	}
	id, err := s.ScheduleOneWith(timedOut, &device{name: "sensor-7"}, 10*time.Millisecond)
	if err != nil {
		panic(err)
	}
	fmt.Println("the job knows its own ID:", <-done == id)
	// Output:
	// sensor-7 timed out
	// the job knows its own ID: true
}

// A pool shared with other work must be non-blocking; the scheduler then
// occupies at most its workers (here 2) of the pool's workers, and never
// releases the pool.
func ExampleWithPool() {
	pool, err := ants.NewPool(16, ants.WithNonblocking(true))
	if err != nil {
		panic(err)
	}
	defer pool.Release()

	s, err := schedule.New(2, schedule.WithPool(pool))
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	if _, err := s.ScheduleOne(func() { close(done) }, time.Millisecond); err != nil {
		panic(err)
	}
	<-done
	s.Shutdown()
	fmt.Println("pool still open:", !pool.IsClosed())

	_, err = schedule.New(2, schedule.WithPool(mustPool(ants.NewPool(1))))
	fmt.Println(err)
	// Output:
	// pool still open: true
	// schedule: WithPool needs a non-blocking pool (ants.WithNonblocking(true))
}

func mustPool(p *ants.Pool, err error) *ants.Pool {
	if err != nil {
		panic(err)
	}
	p.Release()
	return p
}

// A panicking job is recovered; the handler learns which task panicked.
func ExampleWithPanicHandler() {
	panicked := make(chan string, 1)
	s, err := schedule.New(1, schedule.WithPanicHandler(func(id schedule.TaskID, recovered any) {
		panicked <- fmt.Sprint(recovered)
	}))
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()
	if _, err := s.ScheduleOne(func() { panic("sensor driver crashed") }, 0); err != nil {
		panic(err)
	}
	fmt.Println("recovered:", <-panicked)
	// Output: recovered: sensor driver crashed
}

// ShutdownContext waits for running jobs, up to the context's deadline;
// pending tasks are dropped and counted.
func ExampleScheduler_ShutdownContext() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	started := make(chan struct{})
	if _, err := s.ScheduleOne(func() { close(started); time.Sleep(20 * time.Millisecond) }, 0); err != nil {
		panic(err)
	}
	if _, err := s.ScheduleOne(func() {}, time.Hour); err != nil {
		panic(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("shutdown:", s.ShutdownContext(ctx))
	fmt.Println("dropped:", s.Stats().Dropped)
	// Output:
	// shutdown: <nil>
	// dropped: 1
}

// Stats is what a metrics exporter reads: counters that only grow, gauges,
// and a lateness histogram with its sum. Reading it changes nothing, so any
// number of exporters may read one scheduler (the schedprom module turns it
// into Prometheus metrics).
func ExampleScheduler_Stats() {
	s, err := schedule.New(2)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()
	done := make(chan struct{}, 3)
	for range 3 {
		if _, err := s.ScheduleOne(func() { done <- struct{}{} }, time.Millisecond); err != nil {
			panic(err)
		}
	}
	id, _ := s.ScheduleOne(func() {}, time.Hour)
	s.CancelTask(id)
	for range 3 {
		<-done
	}
	st := s.Stats()
	fmt.Printf("scheduled %d, fired %d, cancelled %d, pending %d\n", st.Scheduled, st.Started, st.Cancelled, st.Pending)
	var starts uint64
	for _, n := range st.Lateness {
		starts += n
	}
	fmt.Println("starts in the lateness histogram:", starts)
	fmt.Println("mean lateness under a second:", st.LatenessSum/time.Duration(starts) < time.Second)
	// Output:
	// scheduled 4, fired 3, cancelled 1, pending 0
	// starts in the lateness histogram: 3
	// mean lateness under a second: true
}
