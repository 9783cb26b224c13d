package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind, such as a
// scheduler that was not shut down. Importing ants starts its package-level
// default pool before any test runs; IgnoreCurrent ignores it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// TestSimulation runs the default scenario, scaled down to 2,000 devices, on
// the fake clock of a synctest bubble. The scheduler is created and shut
// down inside the bubble. Every silent device must be detected exactly once
// and at its deadline: on the fake clock a timeout runs at the instant it is
// due, so any lateness beyond a few milliseconds is a bug.
func TestSimulation(t *testing.T) {
	for _, strategy := range []string{"default", "lazy", "eager"} {
		t.Run(strategy, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var progress bytes.Buffer
				cfg := DefaultConfig()
				cfg.Devices = 2000
				cfg.Strategy = strategy
				cfg.Seed = 7
				cfg.Progress = &progress

				start := time.Now()
				res, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				took := time.Since(start)
				t.Logf("%d/%d detected, %d heartbeats in %v, lateness p50 %v p99 %v max %v, stats %+v",
					res.Detected, res.Expected, res.Heartbeats, took, res.LatenessP50, res.LatenessP99, res.LatenessMax, res.Stats)

				if res.Expected != 200 || res.Planned != 200 || res.Fallen != 200 {
					t.Errorf("%d silent devices planned, %d fallen silent, %d expected; want 200 each",
						res.Planned, res.Fallen, res.Expected)
				}
				if res.Interrupted || res.Registered != 2000 || !res.HeartbeatsStarted {
					t.Errorf("interrupted %v, %d devices registered, heartbeats started %v; want a complete run of 2000",
						res.Interrupted, res.Registered, res.HeartbeatsStarted)
				}
				if res.Detected != res.Expected {
					t.Errorf("detected %d silent devices, want %d; not detected: %v", res.Detected, res.Expected, res.Missing)
				}
				if res.FalseTimeouts != 0 {
					t.Errorf("%d false timeouts (%d of live devices, %d early, %d overtaken, %d failed Beats)",
						res.FalseTimeouts, res.LiveTimeouts, res.EarlyTimeouts, res.Overtaken, res.FailedBeats)
				}
				if res.WatchedEnd != 1800 {
					t.Errorf("the Monitor watched %d devices at the end, want the 1800 live ones", res.WatchedEnd)
				}
				if res.DuplicateTimeouts != 0 {
					t.Errorf("%d timeouts ran more than once", res.DuplicateTimeouts)
				}
				if res.ShutdownErr != nil {
					t.Errorf("shutdown: %v", res.ShutdownErr)
				}
				if !res.OK() {
					t.Error("OK() = false")
				}
				const tolerance = 5 * time.Millisecond
				if res.LatenessMax > tolerance || res.LatenessP99 > res.LatenessMax || res.LatenessP50 > res.LatenessP99 {
					t.Errorf("lateness p50 %v, p99 %v, max %v; want ordered and at most %v",
						res.LatenessP50, res.LatenessP99, res.LatenessMax, tolerance)
				}

				// Every silent device fell silent before 10s, so the run
				// ends 2s (timeout) and 500ms (grace) after that at most.
				if took > cfg.Duration+cfg.Timeout+cfg.Grace+time.Second {
					t.Errorf("run took %v of fake time", took)
				}
				// 1,800 live devices beat twice a second for the whole run;
				// the silent ones stop half-way on average.
				if min, max := uint64(1800*2*10), uint64(2000*2*13); res.Heartbeats < min || res.Heartbeats > max {
					t.Errorf("%d heartbeats, want between %d and %d", res.Heartbeats, min, max)
				}
				if res.Stats.Pending != 1800 || res.Stats.Started != 200 || res.Stats.Panics != 0 {
					t.Errorf("stats before shutdown: %+v; want 1800 pending, 200 fired, no panics", res.Stats)
				}

				lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
				if want := int(took / cfg.ProgressEvery); len(lines) < want-1 || len(lines) > want+1 {
					t.Errorf("%d progress lines in %v, want about %d", len(lines), took, want)
				}
				if last := lines[len(lines)-1]; !strings.Contains(last, "declared dead 200 ") || !strings.HasSuffix(last, "watched 1,800") {
					t.Errorf("last progress line %q does not show 200 declared dead and 1,800 watched", last)
				}
			})
		})
	}
}

// TestEdgeShares checks the extreme shares: nobody silent, everybody
// silent.
func TestEdgeShares(t *testing.T) {
	for _, share := range []float64{0, 1} {
		t.Run(fmt.Sprint(share), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Devices = 300
				cfg.Silent = share
				cfg.Duration = 3 * time.Second
				res, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if want := int(share * 300); res.Expected != want || !res.OK() {
					t.Errorf("silent %v: expected %d, detected %d, %d false timeouts, %d repeated; want %d detected and nothing else",
						share, res.Expected, res.Detected, res.FalseTimeouts, res.DuplicateTimeouts, want)
				}
			})
		})
	}
}

// TestZeroGraceCountsAtTheLastDeadline: with -grace 0 the run ends at the
// deadline of the last device to fall silent, and on the fake clock, where
// an expiry runs at the instant it is due, every silent device counts.
func TestZeroGraceCountsAtTheLastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Devices = 500
		cfg.Duration = 3 * time.Second
		cfg.Grace = 0
		start := time.Now()
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Expected != 50 || !res.OK() {
			t.Errorf("expected %d, detected %d, %d false timeouts; want 50 detected and nothing else",
				res.Expected, res.Detected, res.FalseTimeouts)
		}
		if took := time.Since(start); took > cfg.Duration+cfg.Timeout {
			t.Errorf("the run took %v, longer than duration + timeout (%v)", took, cfg.Duration+cfg.Timeout)
		}
	})
}

// TestRun runs the command as main does, on the fake clock, and checks its
// header, report and exit status.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-devices", "1000", "-duration", "3s", "-strategy", "eager", "-seed", "3"}, &stdout, &stderr)
		if code != exitPass {
			t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
		}
		out := stdout.String()
		for _, want := range []string{
			"heartbeat: 1,000 devices, timeout 2s, heartbeat every 500ms, 10% fall silent, seed 3\n",
			"heartbeat: heartbeats for 3s, then up to 2.5s more (timeout 2s + grace 500ms) for the last silent devices' deadlines\n",
			"strategy            eager (eagercancel)\n",
			"registration        1,000 devices watched in ",
			"silent devices      100 detected, 100 expected\n",
			"false timeouts      0 (0 live devices declared dead, 0 devices declared dead before their deadline,\n",
			"0 deadlines of live devices come due before their next heartbeat, 0 failed Beats)\n",
			"repeated timeouts   0 ",
			"detection lateness  p50 ",
			"memory per device   ",
			"watched at the end  900 devices (Monitor.Len), 900 of them live\n",
			"scheduler stats     pending 900, heap entries 900, tombstones 0, fired 100,",
			"tombstones: stale heap entries",
			"result              PASS\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "INTERRUPTED") || strings.Contains(out, "not detected") {
			t.Errorf("report of a complete, passing run:\n%s", out)
		}
		if !strings.Contains(stderr.String(), "heartbeats") {
			t.Errorf("no progress on stderr:\n%s", &stderr)
		}
	})
}

// TestInterrupted ends the run's context 4s (fake time) into a run planned
// for 10s, as a SIGINT would. The run must stop at once, shut its
// scheduler down (TestMain checks that nothing is left running), judge
// only the silent devices already due, and still find no fault.
func TestInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(4*time.Second, cancel)
		cfg := DefaultConfig()
		cfg.Devices = 1000
		cfg.Seed = 5
		cfg.MeasureMemory = true
		start := time.Now()
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 4*time.Second {
			t.Errorf("interrupted run took %v of fake time, want 4s", took)
		}
		t.Logf("planned %d, fallen %d, expected %d, detected %d (+%d within grace), at %v",
			res.Planned, res.Fallen, res.Expected, res.Detected, res.DetectedInGrace, res.InterruptedAt)
		if !res.Interrupted || res.OK() {
			t.Fatalf("Interrupted %v, OK %v; want an interrupted run, never OK", res.Interrupted, res.OK())
		}
		// The heartbeats start after registration and one GC, a few
		// milliseconds of fake time at most.
		if res.InterruptedAt < 3900*time.Millisecond || res.InterruptedAt > 4*time.Second {
			t.Errorf("interrupted %v into the heartbeats, want just under 4s", res.InterruptedAt)
		}
		// Devices fall silent uniformly over 10s: about 40 of the 100 by
		// 4s, and about 15 of them (silent before 1.5s) past their
		// deadline and the grace period.
		if res.Planned != 100 || res.Fallen < 20 || res.Fallen > 60 || res.Fallen >= res.Planned {
			t.Errorf("%d of %d planned silent devices fell silent by 4s, want about 40", res.Fallen, res.Planned)
		}
		if res.Expected < 3 || res.Expected >= res.Fallen {
			t.Errorf("%d expected of %d fallen silent, want some but not all", res.Expected, res.Fallen)
		}
		if res.Detected != res.Expected || len(res.Missing) != 0 {
			t.Errorf("detected %d, expected %d, missing %v", res.Detected, res.Expected, res.Missing)
		}
		if res.DetectedInGrace > res.Fallen-res.Expected {
			t.Errorf("%d detected within the grace period, of %d not yet due", res.DetectedInGrace, res.Fallen-res.Expected)
		}
		if res.FalseTimeouts != 0 || res.DuplicateTimeouts != 0 || res.ShutdownErr != nil {
			t.Errorf("%d false timeouts, %d repeated, shutdown %v; want none", res.FalseTimeouts, res.DuplicateTimeouts, res.ShutdownErr)
		}
		// Every device not yet declared dead is still watched.
		if want := cfg.Devices - res.Detected - res.DetectedInGrace; res.WatchedEnd != want {
			t.Errorf("the Monitor watched %d devices when interrupted, want %d", res.WatchedEnd, want)
		}
		if res.MemRegistered <= 0 || res.MemEnd != 0 {
			t.Errorf("memory per device %v B when registered, %v B at the end; want it measured once, not at the end of an interrupted run",
				res.MemRegistered, res.MemEnd)
		}
	})
}

// TestRunInterrupted checks the command's report and exit status for an
// interrupted run.
func TestRunInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(4*time.Second, cancel)
		var stdout, stderr bytes.Buffer
		code := run(ctx, []string{"-devices", "1000", "-seed", "5"}, &stdout, &stderr)
		if code != exitInterrupted {
			t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInterrupted, &stdout, &stderr)
		}
		out := stdout.String()
		for _, want := range []string{
			"silent devices      ",
			" expected (those past deadline + grace when interrupted)\n",
			"100 planned, ",
			"false timeouts      0 ",
			"detection lateness  p50 ",
			"memory per device   ",
			"result              INTERRUPTED after ",
			"of heartbeats: no failure so far, but no verdict\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "PASS") || strings.Contains(out, "FAIL") {
			t.Errorf("interrupted report gives a verdict:\n%s", out)
		}
		if !strings.Contains(stderr.String(), "heartbeat: interrupted after ") {
			t.Errorf("stderr does not say the run was interrupted:\n%s", &stderr)
		}
	})
}

// TestInterruptedWhileConnecting ends the context before the run starts:
// no device gets watched, and the report says so instead of judging.
func TestInterruptedWhileConnecting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"-devices", "5000"}, &stdout, &stderr)
	if code != exitInterrupted {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInterrupted, &stdout, &stderr)
	}
	out := stdout.String()
	if want := "result              INTERRUPTED while the devices connected (0 of 5,000): nothing to check\n"; !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "silent devices      ") {
		t.Errorf("report judges devices that never connected:\n%s", out)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string // empty: valid
		check   func(Config) bool
	}{
		{args: nil, check: func(c Config) bool {
			return c.Devices == 100_000 && c.Timeout == 2*time.Second && c.Heartbeat == 500*time.Millisecond &&
				c.Silent == 0.1 && c.Duration == 10*time.Second && c.Strategy == "default" && c.Workers > 0
		}},
		{args: []string{"-devices", "5", "-timeout", "1m", "-heartbeat", "59s", "-silent", "1", "-duration", "1ms",
			"-strategy", "eager", "-workers", "3", "-drivers", "1", "-grace", "1s", "-seed", "42"},
			check: func(c Config) bool {
				return c.Devices == 5 && c.Timeout == time.Minute && c.Heartbeat == 59*time.Second && c.Silent == 1 &&
					c.Duration == time.Millisecond && c.Strategy == "eager" && c.Workers == 3 && c.Drivers == 1 &&
					c.Grace == time.Second && c.Seed == 42
			}},
		{args: []string{"-strategy", "lazy", "-silent", "0"}, check: func(c Config) bool { return c.Strategy == "lazy" && c.Silent == 0 }},
		{args: []string{"-devices", "0"}, wantErr: "devices must be positive"},
		{args: []string{"-devices", "-3"}, wantErr: "devices must be positive"},
		{args: []string{"-devices", "2000000000"}, wantErr: "devices must be at most"},
		{args: []string{"-timeout", "0"}, wantErr: "timeout must be positive"},
		{args: []string{"-heartbeat", "-1s"}, wantErr: "heartbeat must be positive"},
		{args: []string{"-heartbeat", "2s"}, wantErr: "must be shorter than timeout"},
		{args: []string{"-heartbeat", "3s", "-timeout", "1s"}, wantErr: "must be shorter than timeout"},
		{args: []string{"-silent", "1.01"}, wantErr: "must be in [0, 1]"},
		{args: []string{"-silent", "-0.1"}, wantErr: "must be in [0, 1]"},
		{args: []string{"-silent", "NaN"}, wantErr: "must be in [0, 1]"},
		{args: []string{"-duration", "0s"}, wantErr: "duration must be positive"},
		{args: []string{"-duration", "24h", "-grace", "0"}, check: func(c Config) bool { return c.Duration == 24*time.Hour && c.Grace == 0 }},
		{args: []string{"-duration", "1000h"}, wantErr: "duration must be at most 24h0m0s (a day's soak), got 1000h0m0s"},
		{args: []string{"-timeout", "1000h"}, wantErr: "timeout must be at most 24h0m0s"},
		{args: []string{"-grace", "-1ms"}, wantErr: "grace must be zero or positive"},
		{args: []string{"-grace", "25h"}, wantErr: "grace must be at most 24h0m0s"},
		{args: []string{"-strategy", "fast"}, wantErr: `strategy must be default, lazy or eager, got "fast"`},
		{args: []string{"-strategy", ""}, wantErr: "strategy must be"},
		{args: []string{"-workers", "0"}, wantErr: "workers must be positive"},
		{args: []string{"-drivers", "-1"}, wantErr: "drivers must be positive"},
		{args: []string{"-devices", "many"}, wantErr: "invalid value"},
		{args: []string{"-timeout", "2"}, wantErr: "invalid value"},
		{args: []string{"-nosuchflag"}, wantErr: "flag provided but not defined"},
		{args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			cfg, err := parseFlags(tt.args, &out)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if !tt.check(cfg) {
					t.Errorf("config %+v", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			// The command exits 2 on it, before simulating anything.
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit status %d, want %d", code, exitUsage)
			}
			if stdout.Len() != 0 {
				t.Errorf("output on stdout: %q", &stdout)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr %q lacks %q", &stderr, tt.wantErr)
			}
		})
	}
}

func TestAnUnknownFlagPrintsTheErrorThenAOneLineHint(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-nosuchflag"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("exit status %d, want %d", code, exitUsage)
	}
	want := "heartbeat: flag provided but not defined: -nosuchflag\nrun 'heartbeat -h' for the flags\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want %q", &stderr, want)
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &stdout, &stderr); code != exitPass {
		t.Errorf("exit status %d, want %d", code, exitPass)
	}
	for _, want := range []string{
		"-heartbeat period",
		"-strategy string",
		"Exit status:\n",
		"  0  pass: ",
		"  1  fail: ",
		"  2  invalid flags",
		"  3  interrupted (SIGINT",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, &stderr)
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("output on stdout: %q", &stdout)
	}
	if _, err := parseFlags([]string{"-help"}, io.Discard); err != flag.ErrHelp {
		t.Errorf("-help: error %v, want flag.ErrHelp", err)
	}
}

func TestReportFailure(t *testing.T) {
	res := &Result{
		Config:            DefaultConfig(),
		HeartbeatsStarted: true,
		Registered:        100_000,
		Planned:           10, Fallen: 10, Expected: 10, Detected: 9,
		FalseTimeouts: 2, LiveTimeouts: 1, Overtaken: 1,
		Missing:      []DeviceReport{{Index: 4, SilentAt: time.Second, LastBeat: 900 * time.Millisecond, Deadline: 2900 * time.Millisecond}},
		WatchedEnd:   99_991,
		HeartbeatLag: time.Second,
	}
	if res.OK() {
		t.Fatal("OK() = true")
	}
	var out bytes.Buffer
	writeReport(&out, res)
	for _, want := range []string{
		"result              FAIL: detected 9 silent devices, expected 10; 2 false timeouts; the Monitor watched 99991 devices at the end, want the 99990 live ones",
		"false timeouts      2 (1 live devices declared dead, 0 devices declared dead before their deadline,",
		"1 deadlines of live devices come due before their next heartbeat, 0 failed Beats)",
		"not detected        device 4: silent at 1s, last heartbeat 900ms, deadline 2.9s, declared dead 0 times",
		"warning             heartbeats were sent up to 1s late (live devices time out at 1.5s late):",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, &out)
		}
	}

	// Interrupted after a failure: the report says both.
	res.Interrupted, res.InterruptedAt = true, 3*time.Second
	out.Reset()
	writeReport(&out, res)
	if want := "result              INTERRUPTED after 3s of heartbeats, and already FAILED: detected 9 silent devices, expected 10; 2 false timeouts\n"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, &out)
	}
}

func TestPercentile(t *testing.T) {
	var s []int64
	for i := range 100 {
		s = append(s, int64(i+1))
	}
	for _, tt := range []struct {
		p    int
		data []int64
		want time.Duration
	}{
		{50, s, 50}, {99, s, 99}, {100, s, 100}, {50, s[:1], 1}, {99, s[:3], 3}, {50, nil, 0},
	} {
		if got := percentile(tt.data, tt.p); got != tt.want {
			t.Errorf("p%d of %d values = %v, want %v", tt.p, len(tt.data), got, tt.want)
		}
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}
