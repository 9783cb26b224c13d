package heartbeat_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
)

// A gateway watches its devices: every packet from a device is a Beat, and a
// device that stays silent for the timeout is reported once.
func Example() {
	s, err := schedule.New(4)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	silent := make(chan uint64, 16)
	m, err := heartbeat.New(s, 50*time.Millisecond, func(device uint64) {
		silent <- device // runs on the scheduler's pool: keep it short
	})
	if err != nil {
		panic(err)
	}

	// Device 8 announced a long keep-alive: it gets a timeout of its own.
	if err := m.Watch(8, time.Hour); err != nil {
		panic(err)
	}
	// Device 7 sends a packet every 5 ms for a while, then falls silent.
	for range 10 {
		if err := m.Beat(7); err != nil {
			panic(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println("watching", m.Len(), "devices")
	fmt.Println("device", <-silent, "went silent")
	fmt.Println("watching", m.Len(), "device")
	fmt.Println("device 8 disconnected cleanly:", m.Forget(8))
	fmt.Println("watching", m.Len(), "devices")
	// Output:
	// watching 2 devices
	// device 7 went silent
	// watching 1 device
	// device 8 disconnected cleanly: true
	// watching 0 devices
}

// Watch gives one key a timeout of its own; the others keep the Monitor's.
// Expiries due while every worker is busy run in deadline order.
func ExampleMonitor_Watch() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	done := make(chan struct{}, 2)
	m, err := heartbeat.New(s, 40*time.Millisecond, func(name string) {
		fmt.Println(name, "timed out")
		done <- struct{}{}
	})
	if err != nil {
		panic(err)
	}
	if err := m.Beat("meter"); err != nil { // the Monitor's 40 ms
		panic(err)
	}
	if err := m.Watch("sensor", 20*time.Millisecond); err != nil {
		panic(err)
	}
	<-done
	<-done
	// Output:
	// sensor timed out
	// meter timed out
}

// Forget stops watching a key, for example when a device disconnects
// cleanly; expired is then never called for that watch.
func ExampleMonitor_Forget() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	m, err := heartbeat.New(s, 20*time.Millisecond, func(conn string) {
		fmt.Println(conn, "timed out") // never printed
	})
	if err != nil {
		panic(err)
	}
	if err := m.Beat("conn-1"); err != nil {
		panic(err)
	}
	fmt.Println("forgotten:", m.Forget("conn-1"))
	fmt.Println("forgotten again:", m.Forget("conn-1"))
	time.Sleep(50 * time.Millisecond) // well past the timeout
	fmt.Println("watching:", m.Len())
	// Output:
	// forgotten: true
	// forgotten again: false
	// watching: 0
}

// A Monitor lives as long as its scheduler: once the scheduler is shut down,
// Beat reports schedule.ErrShutdown.
func ExampleMonitor_Beat() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	m, err := heartbeat.New(s, 20*time.Millisecond, func(uint64) {})
	if err != nil {
		panic(err)
	}
	fmt.Println("before Shutdown:", m.Beat(1))
	s.Shutdown()
	fmt.Println("after Shutdown:", errors.Is(m.Beat(1), schedule.ErrShutdown))
	// Output:
	// before Shutdown: <nil>
	// after Shutdown: true
}

// A server starts a watch when a connection is accepted and refreshes it
// on every packet. Refresh never starts a watch, so a packet handled after
// the connection's Forget does not bring the watch back.
func ExampleMonitor_Refresh() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	m, err := heartbeat.New(s, time.Minute, func(conn string) {})
	if err != nil {
		panic(err)
	}
	if err := m.Watch("conn-1", 30*time.Second); err != nil { // accepted
		panic(err)
	}
	fmt.Println("packet on conn-1:", m.Refresh("conn-1"))
	m.Forget("conn-1") // closed
	fmt.Println("late packet on conn-1:", m.Refresh("conn-1"))
	fmt.Println("watching:", m.Len())
	// Output:
	// packet on conn-1: true
	// late packet on conn-1: false
	// watching: 0
}

// Close ends a Monitor's watches when the server that used it stops, and
// leaves the scheduler to the rest of the program.
func ExampleMonitor_Close() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	m, err := heartbeat.New(s, 20*time.Millisecond, func(conn string) {
		fmt.Println(conn, "timed out") // never printed
	})
	if err != nil {
		panic(err)
	}
	if err := m.Beat("conn-1"); err != nil {
		panic(err)
	}
	m.Close() // the listener stopped
	time.Sleep(50 * time.Millisecond)
	fmt.Println("Beat after Close:", m.Beat("conn-1"))
	fmt.Println("Forget after Close:", m.Forget("conn-1"))
	fmt.Println("scheduler pending tasks:", s.Len())
	// Output:
	// Beat after Close: heartbeat: monitor closed
	// Forget after Close: false
	// scheduler pending tasks: 0
}

// Deadline tells when a watched key expires unless it beats again; its last
// Beat was that instant minus the timeout.
func ExampleMonitor_Deadline() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	const timeout = time.Minute
	m, err := heartbeat.New(s, timeout, func(uint64) {})
	if err != nil {
		panic(err)
	}
	before := time.Now()
	if err := m.Beat(42); err != nil {
		panic(err)
	}
	deadline, ok := m.Deadline(42)
	lastSeen := deadline.Add(-timeout)
	fmt.Println("watched:", ok, "last seen at the Beat:", !lastSeen.Before(before) && !lastSeen.After(time.Now()))
	_, ok = m.Deadline(7)
	fmt.Println("device 7 watched:", ok)
	// Output:
	// watched: true last seen at the Beat: true
	// device 7 watched: false
}

// NewWithDeadline hands expired the deadline that passed, so a gateway can
// log when a device was last heard from however late the pool ran the call.
func ExampleNewWithDeadline() {
	s, err := schedule.New(1)
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	const timeout = 20 * time.Millisecond
	lastHeard := make(chan time.Time, 1)
	m, err := heartbeat.NewWithDeadline(s, timeout, func(dev uint64, deadline time.Time) {
		lastHeard <- deadline.Add(-timeout)
	})
	if err != nil {
		panic(err)
	}
	before := time.Now()
	if err := m.Beat(7); err != nil {
		panic(err)
	}
	after := time.Now()
	at := <-lastHeard
	fmt.Println("device 7 last heard from at its Beat:", !at.Before(before) && !at.After(after))
	// Output:
	// device 7 last heard from at its Beat: true
}
