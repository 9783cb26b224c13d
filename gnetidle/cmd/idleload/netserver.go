package main

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// netServer is the standard library's way: a goroutine per connection,
// which sets a read deadline of now plus the timeout before each read and
// closes the connection when a read times out.
type netServer struct {
	ln     net.Listener
	idle   time.Duration
	conns  atomic.Int64
	closed atomic.Int64 // closed for idleness
	late   loadtest.Lateness
	wg     sync.WaitGroup
}

// readBuffer is each connection's read buffer: a gateway reading small
// device packets needs no more, and the goroutine keeps it for the
// connection's life.
const readBuffer = 512

func startNetServer(addr string, idle time.Duration) (*netServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &netServer{ln: ln, idle: idle}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *netServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.conns.Add(1)
		go s.serve(c)
	}
}

func (s *netServer) serve(c net.Conn) {
	defer s.conns.Add(-1)
	defer c.Close()
	buf := make([]byte, readBuffer)
	for {
		last := time.Now()
		if err := c.SetReadDeadline(last.Add(s.idle)); err != nil {
			return
		}
		if _, err := c.Read(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.closed.Add(1)
				s.late.Add(time.Since(last) - s.idle)
			}
			return
		}
	}
}

// close stops accepting; the process's exit closes the connections.
func (s *netServer) close() {
	s.ln.Close()
	s.wg.Wait()
}

func (s *netServer) addr() string      { return s.ln.Addr().String() }
func (s *netServer) open() int64       { return s.conns.Load() }
func (s *netServer) idleClosed() int64 { return s.closed.Load() }
func (s *netServer) lateness() []int64 { return s.late.Micros() }
