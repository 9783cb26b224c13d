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
	for _, m := range published {
		if err := publish(r, m, v, proxy); err != nil {
			failures[m] = append(failures[m], "publishing: "+err.Error())
		}
	}
	c, err := NewConsumer(tmp, proxy, r.RootModule().Path)
	if err != nil {
		return err
	}
	c.Progress = progress
	for _, m := range published {
		if len(failures[m]) > 0 {
			progress("%s: no consumer build: it breaks a go.mod rule (reported below)", m.Path)
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

	width := dirWidth(r)
	failed := false
	for _, m := range r.Modules {
		if fs := failures[m]; len(fs) > 0 {
			failed = true
			indent := "\n" + strings.Repeat(" ", len("FAIL  ")+width+1)
			fmt.Fprintf(stdout, "FAIL  %-*s %s\n", width, m.Dir, strings.Join(fs, indent))
			continue
		}
		if !m.Published {
			fmt.Fprintf(stdout, "ok    %-*s unpublished (%s); go.mod rules hold\n", width, m.Dir, m.Why)
			continue
		}
		fmt.Fprintf(stdout, "ok    %-*s %s (tag %s)\n", width, m.Dir, results[m], m.Tag(v))
	}
	progress("done in %s", time.Since(start).Round(100*time.Millisecond))
	if failed {
		return errFailed
	}
	return nil
}

// dirWidth returns the length of the longest module directory, to align
// the report.
func dirWidth(r *Repo) int {
	w := 0
	for _, m := range r.Modules {
		w = max(w, len(m.Dir))
	}
	return w
}
