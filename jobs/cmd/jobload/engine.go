package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-schedule/schedule/bench/loadtest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/redis/go-redis/v9"
)

// engine is the durable store of one side of a run, a process of its own
// so that its CPU and memory are read apart from the workers' and the
// producer's: a NATS server with JetStream, or redis-server.
type engine interface {
	// proc is the engine's process.
	proc() *process
	// counts returns the messages the engine has received from its clients
	// so far, and the messages it has handled in all (NATS: in_msgs, and
	// in_msgs + out_msgs, from the server's varz; Redis: the commands its
	// clients sent, total_commands_processed, for both).
	counts() (in, all int64, err error)
	// store returns the bytes the engine holds its data in: the NATS
	// server's store directory, or Redis's used_memory.
	store() (int64, error)
	// close stops the engine and waits for it.
	close()
}

// The role of the process that runs the NATS engine (see runNATS).
const roleNATS = "nats"

// natsEngine is a NATS server with JetStream in a child process of its own
// (this program started again with -role nats), which answers "stats" on
// its standard input with its varz counters.
type natsEngine struct {
	p     *process
	url   string
	dir   string
	stats chan natsStats
}

// natsStats is the engine child's answer to "stats", and its first line.
type natsStats struct {
	Event   string `json:"event"`
	URL     string `json:"url,omitempty"`
	InMsgs  int64  `json:"in_msgs"`
	OutMsgs int64  `json:"out_msgs"`
}

// startNATS starts the NATS engine storing in dir/store, and waits until
// it takes connections.
func startNATS(ctx context.Context, r *runDir, name string) (*natsEngine, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	e := &natsEngine{dir: filepath.Join(r.dir, name+"-store"), stats: make(chan natsStats, 1)}
	p, err := startProcess(ctx, r.dir, name, self, []string{"-role", roleNATS, "-store", e.dir},
		[]string{loadtest.ChildEnv + "=1"}, func(b []byte) {
			var s natsStats
			if json.Unmarshal(b, &s) == nil {
				e.stats <- s
			}
		})
	if err != nil {
		return nil, err
	}
	e.p = p
	select {
	case s := <-e.stats:
		e.url = s.URL
	case <-p.done:
		return nil, fmt.Errorf("the NATS engine exited: %s", stderrTail(r.dir, name))
	case <-time.After(30 * time.Second):
		p.kill()
		return nil, errors.New("the NATS engine was not ready within 30s")
	}
	return e, nil
}

func (e *natsEngine) proc() *process { return e.p }

func (e *natsEngine) counts() (int64, int64, error) {
	if _, err := io.WriteString(e.p.stdin, "stats\n"); err != nil {
		return 0, 0, err
	}
	select {
	case s := <-e.stats:
		return s.InMsgs, s.InMsgs + s.OutMsgs, nil
	case <-e.p.done:
		return 0, 0, errors.New("the NATS engine exited")
	case <-time.After(10 * time.Second):
		return 0, 0, errors.New("the NATS engine did not answer within 10s")
	}
}

func (e *natsEngine) store() (int64, error) { return dirSize(e.dir), nil }

// close stops the engine and removes its store, which a large phase
// makes large and nothing reads after it.
func (e *natsEngine) close() {
	e.p.stdin.Close()
	select {
	case <-e.p.done:
	case <-time.After(15 * time.Second):
		e.p.kill()
	}
	_ = os.RemoveAll(e.dir)
}

// runNATS is the engine child: a NATS server with JetStream on a loopback
// port of the system's choosing, storing in store. Its first line is
// {"event":"ready","url":...}; each "stats" line on its standard input gets
// the server's message counters; the end of its standard input shuts it
// down.
func runNATS(stdin io.Reader, stdout io.Writer, store string) error {
	s, err := server.NewServer(&server.Options{ServerName: "jobload", Host: "127.0.0.1", Port: -1,
		JetStream: true, StoreDir: store, NoSigs: true, NoLog: true})
	if err != nil {
		return err
	}
	go s.Start()
	defer func() {
		s.Shutdown()
		s.WaitForShutdown()
	}()
	if !s.ReadyForConnections(20 * time.Second) {
		return errors.New("the NATS server was not ready within 20s")
	}
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(natsStats{Event: "ready", URL: s.ClientURL()}); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		if sc.Text() != "stats" {
			continue
		}
		v, err := s.Varz(nil)
		if err != nil {
			return err
		}
		if err := enc.Encode(natsStats{Event: "stats", InMsgs: v.InMsgs, OutMsgs: v.OutMsgs}); err != nil {
			return err
		}
	}
	return sc.Err()
}

// redisInstall is what the report says when redis-server is missing.
const redisInstall = "redis-server not found: install it (Debian: apt-get install -y redis-server) or give its path with -redis-server"

// redisEngine is a redis-server on a loopback port of its own, with its
// files in a directory of the run.
type redisEngine struct {
	p    *process
	addr string
	dir  string
	rdb  *redis.Client
}

// startRedis starts bin, an append-only file fsynced every second (the
// configuration that keeps jobs across a restart, as the NATS side's file
// store does), and waits until it answers.
func startRedis(ctx context.Context, r *runDir, name, bin string) (*redisEngine, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.dir, name+"-data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--daemonize", "no",
		"--protected-mode", "yes", "--logfile", ""}
	p, err := startProcess(ctx, r.dir, name, bin, args, nil, nil)
	if err != nil {
		return nil, err
	}
	e := &redisEngine{p: p, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	e.rdb = redis.NewClient(&redis.Options{Addr: e.addr})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := e.rdb.Ping(ctx).Err(); err == nil {
			return e, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("redis-server exited: %s", stderrTail(r.dir, name))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.close()
			return nil, errors.New("redis-server did not answer within 20s")
		}
	}
}

func (e *redisEngine) proc() *process { return e.p }

// info returns field of Redis's INFO section.
func (e *redisEngine) info(section, field string) (int64, error) {
	s, err := e.rdb.Info(context.Background(), section).Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("redis INFO %s has no %s", section, field)
}

func (e *redisEngine) counts() (int64, int64, error) {
	n, err := e.info("stats", "total_commands_processed")
	return n, n, err
}

func (e *redisEngine) store() (int64, error) { return e.info("memory", "used_memory") }

// close stops redis-server and removes its files.
func (e *redisEngine) close() {
	_ = e.rdb.Close()
	e.p.stop(10 * time.Second)
	_ = os.RemoveAll(e.dir)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// findRedis returns the path of redis-server: bin if set, otherwise the
// one on PATH, and false if there is none.
func findRedis(bin string) (string, bool) {
	if bin == "" {
		bin = "redis-server"
	}
	p, err := exec.LookPath(bin)
	return p, err == nil
}
