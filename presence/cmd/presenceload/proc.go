package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process this command started, its stdout read line by line.
type child struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	more  chan struct{}
	done  chan struct{}
}

// spawn runs this executable in a role.
func spawn(role string, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &child{cmd: exec.Command(exe, append([]string{"-role", role}, args...)...), more: make(chan struct{}), done: make(chan struct{})}
	c.cmd.Stderr = os.Stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go c.read(out)
	return c, nil
}

func (c *child) read(r io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		c.mu.Lock()
		c.lines = append(c.lines, sc.Text())
		close(c.more)
		c.more = make(chan struct{})
		c.mu.Unlock()
	}
	_ = c.cmd.Wait()
}

// wait returns the first line starting with prefix, waiting up to d.
func (c *child) wait(prefix string, d time.Duration) (string, error) {
	deadline := time.After(d)
	for i := 0; ; {
		c.mu.Lock()
		for ; i < len(c.lines); i++ {
			if strings.HasPrefix(c.lines[i], prefix) {
				l := c.lines[i]
				c.mu.Unlock()
				return l, nil
			}
		}
		more := c.more
		c.mu.Unlock()
		select {
		case <-more:
		case <-c.done:
			return "", fmt.Errorf("%v ended before %q", c.cmd.Args[1:3], prefix)
		case <-deadline:
			return "", fmt.Errorf("%v: no %q within %v", c.cmd.Args[1:3], prefix, d)
		}
	}
}

// count returns how many lines start with prefix.
func (c *child) count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// last returns the last line starting with prefix.
func (c *child) last(prefix string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(c.lines[i], prefix) {
			return c.lines[i]
		}
	}
	return ""
}

// stop sends SIGTERM and waits for the process to end.
func (c *child) stop(d time.Duration) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(d):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// usage is a process's CPU time and resident memory, from /proc.
type usage struct {
	cpu time.Duration
	rss int64 // bytes
}

// procUsage reads pid's CPU time as the sum of its threads' time on a CPU
// (/proc/<pid>/task/*/schedstat, in nanoseconds: /proc/<pid>/stat counts
// in ticks of 10 ms, too coarse for a window of seconds) and its resident
// memory.
func procUsage(pid int) (usage, error) {
	var u usage
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return u, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			u.cpu += time.Duration(ns)
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			u.rss = kb * 1024
		}
	}
	return u, nil
}
