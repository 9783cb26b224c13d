package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

// The role of a process that runs an asynq worker (see runAsynqWorker).
const roleAsynq = "asynq-worker"

// asynqTaskType is the type of every task this command enqueues.
const asynqTaskType = "jobload"

// asynqOptions are the asynq settings of a run, which the report states.
type asynqOptions struct {
	// Concurrency is asynq.Config.Concurrency, the handlers each worker
	// runs at once. The default, the number of CPUs, leaves the worker
	// idle while a handler waits; the jobs here return at once, so it
	// mostly bounds what a slow moment can pile up.
	Concurrency int
	// CheckInterval is both asynq.Config.DelayedTaskCheckInterval (how
	// often a worker moves due scheduled tasks to pending, 5 s by default)
	// and TaskCheckInterval (how long a worker whose queues are empty
	// waits before it asks again, 1 s by default): the two waits that
	// asynq's documentation names for a task's latency, lowered for low
	// latency. asynq scores scheduled tasks in whole seconds, so a task
	// may run up to a second early whatever they are.
	CheckInterval time.Duration
}

// String states the options as the report prints them.
func (o asynqOptions) String() string {
	return fmt.Sprintf("Concurrency %d, DelayedTaskCheckInterval %v, TaskCheckInterval %v, MaxRetry default (25), Redis appendonly everysec",
		o.Concurrency, o.CheckInterval, o.CheckInterval)
}

// asynqPayload is a task's payload: its key and its due time in Unix
// milliseconds (asynq gives a handler neither), padded to the run's
// payload size.
type asynqPayload struct {
	Job   string `json:"job"`
	Due   int64  `json:"due"`
	Sleep bool   `json:"sleep,omitempty"` // a slow job: the handler sleeps slowJob
	Pad   string `json:"pad,omitempty"`
}

// asynqWorkerFlags are an asynq worker child's flags.
type asynqWorkerFlags struct {
	redis, node string
	opts        asynqOptions
}

func (f *asynqWorkerFlags) args() []string {
	return []string{"-role", roleAsynq, "-redis", f.redis, "-node", f.node,
		"-concurrency", fmt.Sprint(f.opts.Concurrency), "-check", f.opts.CheckInterval.String()}
}

func parseAsynqWorker(args []string, stderr io.Writer) (asynqWorkerFlags, error) {
	var f asynqWorkerFlags
	fs := flag.NewFlagSet(roleAsynq, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.redis, "redis", "", "Redis address")
	fs.StringVar(&f.node, "node", "", "worker name")
	fs.IntVar(&f.opts.Concurrency, "concurrency", 0, "asynq Concurrency")
	fs.DurationVar(&f.opts.CheckInterval, "check", 0, "asynq check intervals")
	err := fs.Parse(args)
	return f, err
}

// outputFlushEvery is how often an asynq worker writes out the lines its
// handlers have buffered; the times in them are taken when the handler
// runs, so the delay does not change them.
const outputFlushEvery = 20 * time.Millisecond

// runAsynqWorker is an asynq worker child: an asynq server on the run's
// Redis whose handler prints a start line, as jobworker does, and
// succeeds. It says {"event":"ready"} once started, and shuts down when
// its standard input ends or ctx does.
func runAsynqWorker(ctx context.Context, f asynqWorkerFlags, stdin io.Reader, stdout io.Writer) error {
	out := bufio.NewWriterSize(stdout, 1<<16)
	var mu sync.Mutex
	write := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		_, _ = out.Write(append(b, '\n'))
		mu.Unlock()
	}
	flush := func() {
		mu.Lock()
		_ = out.Flush()
		mu.Unlock()
	}
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: f.redis}, asynq.Config{
		Concurrency:              f.opts.Concurrency,
		DelayedTaskCheckInterval: f.opts.CheckInterval,
		TaskCheckInterval:        f.opts.CheckInterval,
		LogLevel:                 asynq.ErrorLevel,
		ShutdownTimeout:          2 * time.Second,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(asynqTaskType, func(ctx context.Context, t *asynq.Task) error {
		at := time.Now().UnixMilli()
		var p asynqPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		retried, _ := asynq.GetRetryCount(ctx)
		write(event{Event: "start", Job: p.Job, Attempt: retried + 1, Due: p.Due, At: at, Node: f.node})
		if p.Sleep {
			t := time.NewTimer(slowJob)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		write(event{Event: "done", Job: p.Job, Attempt: retried + 1, At: time.Now().UnixMilli(), Node: f.node})
		return nil
	})
	if err := srv.Start(mux); err != nil {
		return err
	}
	write(event{Event: "ready", Node: f.node})
	flush()
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(eof)
	}()
	tick := time.NewTicker(outputFlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			flush()
			continue
		case <-eof:
		case <-ctx.Done():
		}
		break
	}
	srv.Shutdown()
	flush()
	return nil
}

// asynqProducer enqueues tasks from a pool of goroutines sharing one
// asynq.Client, as a producer service would.
type asynqProducer struct {
	client *asynq.Client
	jobs   chan asynqJob
	wg     sync.WaitGroup
	added  atomic.Int64
	// maxLag is the most that an Enqueue ended after the moment it was
	// meant to be made (see asynqJob.want), in nanoseconds.
	maxLag atomic.Int64
	mu     sync.Mutex
	err    error
	pad    string
}

// asynqJob is a task to enqueue, and the moment it was meant to be
// enqueued by.
type asynqJob struct {
	key       string
	due, want time.Time
	slow      bool
}

// asynqProducers is how many goroutines enqueue at once.
const asynqProducers = 32

func newAsynqProducer(addr string, payload int) *asynqProducer {
	p := &asynqProducer{client: asynq.NewClient(asynq.RedisClientOpt{Addr: addr, PoolSize: asynqProducers}),
		jobs: make(chan asynqJob, 4*asynqProducers)}
	// The JSON around the padding takes about 40 bytes.
	p.pad = strings.Repeat("x", max(0, payload-40))
	for range asynqProducers {
		p.wg.Add(1)
		go p.run()
	}
	return p
}

func (p *asynqProducer) run() {
	defer p.wg.Done()
	for j := range p.jobs {
		b, _ := json.Marshal(asynqPayload{Job: j.key, Due: j.due.UnixMilli(), Sleep: j.slow, Pad: p.pad})
		_, err := p.client.Enqueue(asynq.NewTask(asynqTaskType, b), asynq.ProcessAt(j.due),
			asynq.TaskID(j.key))
		if err != nil {
			p.mu.Lock()
			if p.err == nil {
				p.err = fmt.Errorf("enqueue %s: %w", j.key, err)
			}
			p.mu.Unlock()
			continue
		}
		p.added.Add(1)
		if !j.want.IsZero() {
			lag := int64(time.Since(j.want))
			for {
				old := p.maxLag.Load()
				if lag <= old || p.maxLag.CompareAndSwap(old, lag) {
					break
				}
			}
		}
	}
}

func (p *asynqProducer) add(key string, due, want time.Time, slow bool) error {
	p.jobs <- asynqJob{key: key, due: due, want: want, slow: slow}
	return nil
}

func (p *asynqProducer) flush() error { return nil }

func (p *asynqProducer) close() (int, time.Duration, error) {
	close(p.jobs)
	p.wg.Wait()
	err := errors.Join(p.err, p.client.Close())
	return int(p.added.Load()), time.Duration(p.maxLag.Load()), err
}
