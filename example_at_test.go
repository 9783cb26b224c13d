package schedule_test

import (
	"fmt"
	"time"

	"github.com/go-schedule/schedule"
)

// A deadline already known as an instant, such as a lease's expiry, needs
// no conversion into a delay.
func ExampleScheduler_ScheduleAt() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	leaseEnds := time.Now().Add(20 * time.Millisecond)
	done := make(chan struct{})
	if _, err := s.ScheduleAt(func() { close(done) }, leaseEnds); err != nil {
		panic(err)
	}
	<-done
	fmt.Println("lease expired, not early:", !time.Now().Before(leaseEnds))
	// Output:
	// lease expired, not early: true
}

// Deadline tells a caller when a pending task is due and, inside a job,
// the instant the job came due, however late a busy pool started it.
func ExampleScheduler_Deadline() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	lateBy := make(chan time.Duration, 1)
	job := func(id schedule.TaskID, _ any) {
		due, _ := s.Deadline(id)
		lateBy <- time.Since(due)
	}
	id, err := s.ScheduleOneWith(job, nil, time.Hour)
	if err != nil {
		panic(err)
	}
	due, ok := s.Deadline(id)
	fmt.Println("due in about an hour:", ok && time.Until(due) > 59*time.Minute)
	s.Reset(id, 10*time.Millisecond)
	fmt.Println("started at or after its deadline:", <-lateBy >= 0)
	// Output:
	// due in about an hour: true
	// started at or after its deadline: true
}
