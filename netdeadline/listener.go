package netdeadline

import (
	"net"

	"github.com/go-schedule/schedule"
)

// Listener is a [net.Listener] whose Accept returns connections wrapped
// as [NewConn] wraps them, all served by one [schedule.Scheduler]. Close
// and Addr are the wrapped listener's.
type Listener struct {
	net.Listener
	s *schedule.Scheduler
}

// NewListener returns l wrapped so that every connection it accepts keeps
// its deadlines on s. It returns [ErrNilListener] for a nil l and
// [ErrNilScheduler] for a nil s.
func NewListener(l net.Listener, s *schedule.Scheduler) (*Listener, error) {
	if l == nil {
		return nil, ErrNilListener
	}
	if s == nil {
		return nil, ErrNilScheduler
	}
	return &Listener{Listener: l, s: s}, nil
}

// Accept waits for the next connection and returns it wrapped, as a
// [*Conn].
// It returns the wrapped listener's errors unchanged.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wrap(c, l.s), nil
}
