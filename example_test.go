package schedule_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/eagercancel"
	"github.com/go-schedule/schedule/lazycancel"
)

// A one-shot task runs once, after its delay.
func ExampleScheduler_ScheduleOne() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	done := make(chan struct{})
	start := time.Now()
	_, err = s.ScheduleOne(func() {
		fmt.Println("ran after at least 20ms:", time.Since(start) >= 20*time.Millisecond)
		close(done)
	}, 20*time.Millisecond)
	if err != nil {
		panic(err)
	}
	<-done
	// Output: ran after at least 20ms: true
}

// A repeating task runs every interval until it is cancelled; here it
// cancels itself from inside its own job.
func ExampleScheduler_Schedule() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	var (
		mu    sync.Mutex
		runs  int
		id    schedule.TaskID
		ready = make(chan struct{})
		done  = make(chan struct{})
	)
	id, err = s.Schedule(func() {
		<-ready // id is set
		mu.Lock()
		defer mu.Unlock()
		runs++
		fmt.Println("tick", runs)
		if runs == 3 {
			fmt.Println("cancelled:", s.CancelTask(id))
			close(done)
		}
	}, 10*time.Millisecond)
	if err != nil {
		panic(err)
	}
	close(ready)
	<-done
	// Output:
	// tick 1
	// tick 2
	// tick 3
	// cancelled: true
}

// CancelTask reports whether it stopped the task: true the first time,
// false once there is nothing left to stop.
func ExampleScheduler_CancelTask() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	id, err := s.ScheduleOne(func() { fmt.Println("never printed") }, time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println("pending:", s.Len())
	fmt.Println("first cancel:", s.CancelTask(id))
	fmt.Println("second cancel:", s.CancelTask(id))
	fmt.Println("pending:", s.Len())
	// Output:
	// pending: 1
	// first cancel: true
	// second cancel: false
	// pending: 0
}

// The heartbeat pattern: each device has a timeout task, and every
// heartbeat pushes the device's deadline out with Reset. A device that goes
// silent times out once, a timeout after its last heartbeat.
func ExampleScheduler_Reset() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	const timeout = 200 * time.Millisecond
	dead := make(chan string, 2)
	devices := map[string]schedule.TaskID{}
	for _, name := range []string{"sensor-a", "sensor-b"} {
		id, err := s.ScheduleOne(func() { dead <- name }, timeout)
		if err != nil {
			panic(err)
		}
		devices[name] = id
	}

	// sensor-a keeps sending heartbeats; sensor-b has gone quiet.
	for range 5 {
		time.Sleep(timeout / 10)
		s.Reset(devices["sensor-a"], timeout)
	}
	fmt.Println("timed out:", <-dead)
	select {
	case name := <-dead:
		fmt.Println("unexpected timeout:", name)
	default:
		fmt.Println("sensor-a is alive")
	}
	// Output:
	// timed out: sensor-b
	// sensor-a is alive
}

// The cancel strategies are chosen by the package that builds the
// scheduler; the API is the same.
func Example_strategies() {
	lazy, err := lazycancel.New(2)
	if err != nil {
		panic(err)
	}
	defer lazy.Shutdown()
	eager, err := eagercancel.New(2)
	if err != nil {
		panic(err)
	}
	defer eager.Shutdown()

	for _, s := range []*schedule.Scheduler{lazy, eager} {
		for range 100 {
			id, _ := s.ScheduleOne(func() {}, time.Hour)
			s.CancelTask(id)
		}
		fmt.Println("pending:", s.Len())
	}
	// Output:
	// pending: 0
	// pending: 0
}
