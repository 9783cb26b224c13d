package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
)

// The systems a run measures, as the report names them.
const (
	sysJobs  = "go-schedule jobs (NATS)"
	sysAsynq = "asynq + Redis"
)

// runDir is the directory of a run's outputs: every child's raw standard
// output (NAME.jsonl) and standard error (NAME.stderr), the engines'
// stores, the built commands, and the report.
type runDir struct{ dir string }

// producer adds jobs to a fleet's engine, as a producer service would.
type producer interface {
	// add hands the job key, due at due, to the producer; want is the
	// moment it was meant to be added by (zero when it does not matter),
	// against which the producer's lag is measured. A slow job's attempt
	// runs for slowJob; the others return at once.
	add(key string, due, want time.Time, slow bool) error
	// flush makes sure the jobs handed so far are on their way.
	flush() error
	// close waits for every job to be added and returns how many were, and
	// the producer's largest lag.
	close() (added int, lag time.Duration, err error)
}

// fleet is one side of a phase: its engine, its workers, and what starts
// a producer.
type fleet struct {
	eng     engine
	workers []*process
	// stopWorker stops worker i the orderly way.
	stopWorker func(i int)
	// newProducer starts a producer. every is how often a stream's
	// producer sends what it has been handed (see jobsBatches), 0 for a
	// bulk load sent as fast as it goes.
	newProducer func(ctx context.Context, every time.Duration) (producer, error)
	// ended reports whether the engine no longer holds the job key, nil
	// where the engine is not asked (asynq, whose workers print the end
	// line before they record the end, so that a kill between the two
	// runs the task again rather than hiding its end).
	ended func(ctx context.Context, key string) (bool, error)
}

// cpu returns the CPU time the workers and the engine have used so far.
func (f *fleet) cpu() time.Duration { return append(group{f.eng.proc()}, f.workers...).cpu() }

// down stops the workers and then the engine.
func (f *fleet) down() {
	for i := range f.workers {
		f.stopWorker(i)
	}
	f.eng.close()
}

// system starts fleets of one kind.
type system interface {
	name() string
	// up starts an engine and n workers for phase, whose output goes to
	// col, and waits until every worker is ready.
	up(ctx context.Context, r *runDir, phase string, n int, col *collector) (*fleet, error)
}

// waitReady waits until n workers have said they are ready, or one exits.
func waitReady(ctx context.Context, col *collector, ws []*process, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	var exited error
	ok := col.waitFor(ctx, deadline, func() bool {
		for _, w := range ws {
			select {
			case <-w.done:
				exited = fmt.Errorf("%s exited before it was ready: %v", w.name, w.err)
				return true
			default:
			}
		}
		return col.readyCount() >= n
	})
	if exited != nil {
		return exited
	}
	if !ok {
		return fmt.Errorf("%d of %d workers ready within %v", col.readyCount(), n, within)
	}
	return nil
}

// jobsSystem is go-schedule's jobs: jobworker processes on a NATS engine,
// and jobctl load as the producer, driven through their command contract.
type jobsSystem struct {
	jobworker, jobctl string
	lease             time.Duration
	pool              int // jobworker -workers
	payload           string
	loadBatch         int // lines per jobctl load process, 0: no limit
}

func (s *jobsSystem) name() string { return sysJobs }

func (s *jobsSystem) up(ctx context.Context, r *runDir, phase string, n int, col *collector) (*fleet, error) {
	eng, err := startNATS(ctx, r, "jobs-"+phase+"-nats")
	if err != nil {
		return nil, err
	}
	f := &fleet{eng: eng}
	f.stopWorker = func(i int) { f.workers[i].stop(15 * time.Second) }
	for i := range n {
		node := nodeName(i)
		w, err := startProcess(ctx, r.dir, "jobs-"+phase+"-"+node, s.jobworker,
			[]string{"-nats", eng.url, "-node", node, "-queue", phase, "-lease", s.lease.String(),
				"-workers", strconv.Itoa(s.pool), "-grace", "2s"}, nil, col.line)
		if err != nil {
			f.down()
			return nil, err
		}
		f.workers = append(f.workers, w)
	}
	if err := waitReady(ctx, col, f.workers, n, 60*time.Second); err != nil {
		f.down()
		return nil, err
	}
	f.newProducer = func(ctx context.Context, every time.Duration) (producer, error) {
		start := func() (*jobctlLoad, error) { return startJobctlLoad(ctx, r, s.jobctl, eng.url, phase, s.payload) }
		at := 1
		if every > 0 {
			at = streamBatches
		}
		return &jobsBatches{start: start, every: every, limit: s.loadBatch, sem: make(chan struct{}, at)}, nil
	}
	f.ended = func(ctx context.Context, key string) (bool, error) {
		return jobctlGone(ctx, s.jobctl, eng.url, phase, key)
	}
	return f, nil
}

// jobctlGone runs jobctl get for key and reports whether the engine holds
// no job under it (state unknown: never added, done, or cancelled).
func jobctlGone(ctx context.Context, jobctl, url, queue, key string) (bool, error) {
	out, err := exec.CommandContext(ctx, jobctl, "-nats", url, "-queue", queue, "get", "-key", key).Output()
	if err != nil {
		return false, fmt.Errorf("jobctl get -key %s: %w", key, err)
	}
	var got struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return false, fmt.Errorf("jobctl get -key %s printed %q: %w", key, out, err)
	}
	return got.State == "unknown", nil
}

// jobctlLoad is a jobctl load process fed on its standard input.
type jobctlLoad struct {
	p       *process
	w       *bufWriter
	payload string
	added   chan int
	// oldest is the earliest want among the jobs it was handed, against
	// which its lag is measured when it ends.
	oldest time.Time
	dir    string
}

// bufWriter is a buffered writer over a child's standard input.
type bufWriter struct {
	io.WriteCloser
	buf []byte
}

func startJobctlLoad(ctx context.Context, r *runDir, jobctl, url, queue, payload string) (*jobctlLoad, error) {
	l := &jobctlLoad{payload: payload, added: make(chan int, 1), dir: r.dir}
	name := fmt.Sprintf("jobs-%s-jobctl-%04d", queue, jobctlRuns.Add(1))
	p, err := startProcess(ctx, r.dir, name, jobctl, []string{"-nats", url, "-queue", queue, "load"}, nil,
		func(b []byte) {
			var v struct {
				Added *int `json:"added"`
			}
			if json.Unmarshal(b, &v) == nil && v.Added != nil {
				l.added <- *v.Added
			}
		})
	if err != nil {
		return nil, err
	}
	l.p = p
	l.w = &bufWriter{WriteCloser: p.stdin}
	return l, nil
}

// jobctlRuns numbers the jobctl load processes of a run, for their files.
var jobctlRuns atomic.Int64

// loadLine is a line of jobctl load's input.
type loadLine struct {
	Job     string `json:"job"`
	At      string `json:"at"`
	Payload string `json:"payload,omitempty"`
}

// rfc3339Milli formats a due time to the millisecond, as -at takes it.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// slowPayload is a slow job's payload on the go-schedule side: jobworker's
// built-in handler sleeps for the duration it names.
var slowPayload = `{"sleep":"` + slowJob.String() + `"}`

func (l *jobctlLoad) add(key string, due, want time.Time, slow bool) error {
	payload := l.payload
	if slow {
		payload = slowPayload
	}
	b, err := json.Marshal(loadLine{Job: key, At: due.UTC().Format(rfc3339Milli), Payload: payload})
	if err != nil {
		return err
	}
	l.w.buf = append(append(l.w.buf, b...), '\n')
	if !want.IsZero() && l.oldest.IsZero() {
		l.oldest = want
	}
	if len(l.w.buf) >= 1<<16 {
		return l.flush()
	}
	return nil
}

func (l *jobctlLoad) flush() error {
	if len(l.w.buf) > 0 {
		if _, err := l.w.Write(l.w.buf); err != nil {
			return fmt.Errorf("jobctl load: %w: %s", err, stderrTail(l.dir, l.p.name))
		}
		l.w.buf = l.w.buf[:0]
	}
	return nil
}

func (l *jobctlLoad) close() (int, time.Duration, error) {
	err := l.flush()
	l.w.Close()
	<-l.p.done
	var lag time.Duration
	if !l.oldest.IsZero() {
		lag = time.Since(l.oldest)
	}
	if l.p.err != nil {
		return 0, lag, fmt.Errorf("jobctl load: %v: %s", l.p.err, stderrTail(l.dir, l.p.name))
	}
	select {
	case n := <-l.added:
		return n, lag, err
	default:
		return 0, lag, errors.Join(err, errors.New("jobctl load printed no {\"added\":N}"))
	}
}

// streamBatches is how many jobctl load processes a stream runs at once;
// a bulk load runs one at a time, as one producer.
const streamBatches = 4

// jobsBatches is the go-schedule side's producer: jobs go to jobctl load
// processes, each fed a batch on its standard input. A bulk load is one
// batch, unless -load-batch cuts it into batches of that many lines, one
// process after the other. A stream hands each batch of jobs
// (those handed over one period, every, or -load-batch lines, whichever
// comes first) to a process of its own, up to streamBatches at once. A
// job's lag is from the moment it was meant to be added to the end of its
// batch's process, whose adds are then acknowledged.
type jobsBatches struct {
	start func() (*jobctlLoad, error)
	every time.Duration // 0: no period
	limit int           // lines a batch, 0: no limit
	sem   chan struct{}
	wg    sync.WaitGroup
	cur   *jobctlLoad
	lines int       // lines handed to cur
	since time.Time // when cur was started

	mu    sync.Mutex
	added int
	lag   time.Duration
	err   error
}

func (s *jobsBatches) add(key string, due, want time.Time, slow bool) error {
	if s.cur == nil {
		s.sem <- struct{}{}
		l, err := s.start()
		if err != nil {
			<-s.sem
			return err
		}
		s.cur, s.lines, s.since = l, 0, time.Now()
	}
	if err := s.cur.add(key, due, want, slow); err != nil {
		return err
	}
	s.lines++
	if s.limit > 0 && s.lines >= s.limit {
		s.send()
	}
	return nil
}

// send closes the current batch's input and collects its process's
// answer in the background.
func (s *jobsBatches) send() {
	l := s.cur
	s.cur = nil
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.sem }()
		n, lag, err := l.close()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.added += n
		s.lag = max(s.lag, lag)
		s.err = errors.Join(s.err, err)
	}()
}

func (s *jobsBatches) flush() error {
	if s.cur != nil && s.every > 0 && time.Since(s.since) >= s.every {
		s.send()
	}
	return nil
}

func (s *jobsBatches) close() (int, time.Duration, error) {
	if s.cur != nil {
		s.send()
	}
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.added, s.lag, s.err
}

// asynqSystem is asynq workers (this program started again with -role
// asynq-worker) on a redis-server, and an asynq.Client as the producer.
type asynqSystem struct {
	redisBin string
	opts     asynqOptions
	payload  int
}

func (s *asynqSystem) name() string { return sysAsynq }

func (s *asynqSystem) up(ctx context.Context, r *runDir, phase string, n int, col *collector) (*fleet, error) {
	eng, err := startRedis(ctx, r, "asynq-"+phase+"-redis", s.redisBin)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		eng.close()
		return nil, err
	}
	f := &fleet{eng: eng}
	f.stopWorker = func(i int) {
		w := f.workers[i]
		w.stdin.Close()
		select {
		case <-w.done:
		case <-time.After(15 * time.Second):
			w.kill()
		}
	}
	for i := range n {
		wf := asynqWorkerFlags{redis: eng.addr, node: nodeName(i), opts: s.opts}
		w, err := startProcess(ctx, r.dir, "asynq-"+phase+"-"+wf.node, self, wf.args(),
			[]string{loadtest.ChildEnv + "=1"}, col.line)
		if err != nil {
			f.down()
			return nil, err
		}
		f.workers = append(f.workers, w)
	}
	if err := waitReady(ctx, col, f.workers, n, 60*time.Second); err != nil {
		f.down()
		return nil, err
	}
	f.newProducer = func(context.Context, time.Duration) (producer, error) {
		return newAsynqProducer(eng.addr, s.payload), nil
	}
	return f, nil
}

// buildJobs builds jobworker and jobctl from the jobs module in dir into
// bin, and returns their paths.
func buildJobs(ctx context.Context, dir, bin string) (jobworker, jobctl string, err error) {
	for _, c := range []string{"jobworker", "jobctl"} {
		if _, err := os.Stat(filepath.Join(dir, "cmd", c)); err != nil {
			return "", "", fmt.Errorf("no cmd/%s in the jobs module at %s", c, dir)
		}
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, c), "./cmd/"+c)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build ./cmd/%s in %s: %v\n%s", c, dir, err, strings.TrimSpace(string(out)))
		}
	}
	return filepath.Join(bin, "jobworker"), filepath.Join(bin, "jobctl"), nil
}

// nodeName is the node name of a fleet's worker i, on either system.
func nodeName(i int) string { return fmt.Sprintf("w%d", i) }

// killWorker ends worker i of f with SIGKILL.
func killWorker(f *fleet, i int) { f.workers[i].signal(syscall.SIGKILL) }
