package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// check runs the whole check and prints one line per module to stdout,
// progress to stderr. It returns errFailed when any module fails.
func check(r *Repo, v string, keep bool, stdout, stderr io.Writer) error {
	start := time.Now()
	progress := func(format string, args ...any) {
		fmt.Fprintf(stderr, "release: "+format+"\n", args...)
	}
	if v == "" {
		var err error
		if v, err = ReleaseVersion(r); err != nil {
			fmt.Fprintf(stdout, "FAIL  release version: %v\n", err)
			return errFailed
		}
	} else if err := CheckVersion(v); err != nil {
		return err
	}
	published := r.Published()
	progress("%d modules, %d published; release version %s", len(r.Modules), len(published), v)

	failures := map[*Module][]string{}
	for _, p := range Verify(r, v) {
		failures[p.Module] = append(failures[p.Module], p.Msg)
	}
	results := map[*Module]string{}

	tmp, err := os.MkdirTemp("", "go-schedule-release-")
	if err != nil {
		return err
	}
	if keep {
		progress("keeping %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	proxy := filepath.Join(tmp, "proxy")
	progress("publishing the working tree as %s to a file-system proxy", v)
	if err := Publish(r, published, v, proxy); err != nil {
		return fmt.Errorf("publishing: %w", err)
	}
	c, err := NewConsumer(tmp, proxy, r.RootModule().Path)
	if err != nil {
		return err
	}
	c.Progress = progress
	for _, m := range published {
		if len(failures[m]) > 0 {
			progress("%s: skipping its consumer build (go.mod rules fail)", m.Path)
			continue
		}
		progress("%s: a consumer module gets it and builds every package", m.Path)
		summary, err := c.Check(r, m, v)
		if err != nil {
			failures[m] = append(failures[m], err.Error())
			continue
		}
		results[m] = summary
	}

	failed := false
	for _, m := range r.Modules {
		name := m.Dir
		if fs := failures[m]; len(fs) > 0 {
			failed = true
			fmt.Fprintf(stdout, "FAIL  %-24s %s\n", name, strings.Join(fs, "\n      "+strings.Repeat(" ", 25)))
			continue
		}
		if !m.Published {
			fmt.Fprintf(stdout, "ok    %-24s unpublished (%s); go.mod rules hold\n", name, m.Why)
			continue
		}
		fmt.Fprintf(stdout, "ok    %-24s %s (tag %s)\n", name, results[m], m.Tag(v))
	}
	progress("done in %s", time.Since(start).Round(100*time.Millisecond))
	if failed {
		return errFailed
	}
	return nil
}
