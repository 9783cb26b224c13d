package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100
// on every Linux that Go runs on).
const clockTick = 10 * time.Millisecond

// procCPU returns the CPU time, user and system, that process pid has used
// so far, read from /proc/PID/stat, which counts every thread of the
// process, the engine's and the workers' alike. It returns 0 where /proc
// does not tell (the process has exited, or the system has no /proc).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields that
	// count start after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// After the name: state is field 3 of stat(5), utime 14 and stime 15.
	if len(f) < 13 {
		return 0
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(user+sys) * clockTick
}

// procRSS returns the resident set of process pid in bytes, read from
// /proc/PID/statm, or 0 where /proc does not tell.
func procRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// dirSize returns the bytes that the files under dir hold (their sizes,
// not the blocks they take), or 0 for a missing directory.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // a file removed while walking counts as nothing
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// process is a child process of a run: a jobworker, a jobctl, the NATS
// engine, redis-server or an asynq worker. Its standard output is read line
// by line and copied to a file of raw output; its standard error goes to a
// file of its own.
type process struct {
	name string
	cmd  *exec.Cmd
	// stdin is the child's standard input, for the processes that read it
	// (jobctl load, the engine, the asynq workers).
	stdin io.WriteCloser
	// done is closed when the child has exited and its output is read.
	done chan struct{}
	err  error // the child's exit error, once done is closed
}

// pid returns the child's process ID.
func (p *process) pid() int { return p.cmd.Process.Pid }

// startProcess starts bin with args as a child called name. Each line of
// its standard output goes to line, from a goroutine of its own, and to
// the file dir/name.jsonl; its standard error goes to dir/name.stderr. The
// child is killed if ctx ends.
func startProcess(ctx context.Context, dir, name, bin string, args []string, env []string, line func([]byte)) (*process, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errFile, err := os.Create(filepath.Join(dir, name+".stderr"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = errFile
	outFile, err := os.Create(filepath.Join(dir, name+".jsonl"))
	if err != nil {
		errFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		errFile.Close()
		outFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		w := bufio.NewWriterSize(outFile, 1<<16)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
		for sc.Scan() {
			b := sc.Bytes()
			_, _ = w.Write(b)
			_ = w.WriteByte('\n')
			if line != nil {
				line(b)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.err = cmd.Wait()
		_ = w.Flush()
		outFile.Close()
		errFile.Close()
		// An empty standard error says nothing: leave no file for it.
		if info, err := os.Stat(errFile.Name()); err == nil && info.Size() == 0 {
			_ = os.Remove(errFile.Name())
		}
		close(p.done)
	}()
	return p, nil
}

// signal sends sig to the child, if it is still running.
func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop asks the child to end with SIGTERM and waits up to grace for it,
// then kills it.
func (p *process) stop(grace time.Duration) {
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// kill ends the child with SIGKILL and waits for it.
func (p *process) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// stderrTail returns the last lines of what the child wrote on its
// standard error, for an error message.
func stderrTail(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name+".stderr"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}

// group is a set of processes whose CPU and memory are read together.
type group []*process

// cpu returns the CPU time the group's processes have used so far.
func (g group) cpu() time.Duration {
	var d time.Duration
	for _, p := range g {
		d += procCPU(p.pid())
	}
	return d
}

// rss returns the sum of the group's resident sets.
func (g group) rss() int64 {
	var n int64
	for _, p := range g {
		n += procRSS(p.pid())
	}
	return n
}
