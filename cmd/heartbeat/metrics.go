package main

import (
	"bytes"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
)

// metricsServer serves /metrics over HTTP while the simulation runs: the
// Prometheus text exposition of its scheduler and Monitor (exposition.go).
// Until the run has made them, /metrics answers 503.
type metricsServer struct {
	ln     net.Listener
	srv    *http.Server
	served chan struct{} // closed when Serve has returned
	src    atomic.Pointer[metricsSource]
}

type metricsSource struct {
	s *schedule.Scheduler
	m *heartbeat.Monitor[int32]
}

// listenMetrics listens on addr (host:port; port 0 picks a free one) and
// starts serving.
func listenMetrics(addr string) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ms := &metricsServer{ln: ln, served: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", ms)
	ms.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(ms.served)
		// ErrServerClosed after close; any other error only fails the
		// scrapes, and the simulation goes on.
		_ = ms.srv.Serve(ln)
	}()
	return ms, nil
}

// url returns the address to scrape.
func (ms *metricsServer) url() string { return "http://" + ms.ln.Addr().String() + "/metrics" }

// watch makes the server report s and m; it is Config.Started.
func (ms *metricsServer) watch(s *schedule.Scheduler, m *heartbeat.Monitor[int32]) {
	ms.src.Store(&metricsSource{s, m})
}

// ServeHTTP writes the exposition of one snapshot: reading it changes
// nothing, so any number of scrapers may read it.
func (ms *metricsServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	src := ms.src.Load()
	if src == nil {
		http.Error(w, "the simulation has not started its scheduler yet", http.StatusServiceUnavailable)
		return
	}
	var b bytes.Buffer
	// Expired before Len, as schedprom reads them: a key that expires in
	// between counts in neither, never in both.
	expired := src.m.Expired()
	_ = writeMetrics(&b, src.s.Stats(), src.m.Len(), expired)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// close stops the server and waits for it.
func (ms *metricsServer) close() {
	_ = ms.srv.Close()
	<-ms.served
}
