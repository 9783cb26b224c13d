package main

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// commandTimeout bounds each go command and the consumer program: a fetch
// that hangs fails the check rather than CI's overall limit.
const commandTimeout = 5 * time.Minute

// outputTail is how many lines of a failed command's output a FAIL line
// carries.
const outputTail = 20

// A Consumer builds programs against the published modules the way a user
// of the project would: a fresh module of its own, no replace directives,
// modules fetched through a proxy.
type Consumer struct {
	Dir      string   // where consumer modules are created
	Env      []string // the environment of every go command
	Progress func(format string, args ...any)
}

// NewConsumer returns a Consumer working in dir, whose go commands fetch the
// project's modules from the file-system proxy at proxyDir and everything
// else from the host's module cache, then the host's GOPROXY. Its module
// cache is its own, under dir, so that an earlier run's copy of a version
// never hides the tree being checked; checksums of the project's modules are
// not looked up in the checksum database, which has never seen them.
func NewConsumer(dir, proxyDir, rootPath string) (*Consumer, error) {
	hostCache, err := goEnv("GOMODCACHE")
	if err != nil {
		return nil, err
	}
	hostProxy, err := goEnv("GOPROXY")
	if err != nil {
		return nil, err
	}
	proxies := []string{fileURL(proxyDir), fileURL(filepath.Join(hostCache, "cache", "download"))}
	if hostProxy != "" {
		proxies = append(proxies, hostProxy)
	}
	set := map[string]string{
		"GOPROXY":     strings.Join(proxies, ","),
		"GOMODCACHE":  filepath.Join(dir, "modcache"),
		"GONOSUMDB":   rootPath,
		"GOPRIVATE":   "",
		"GONOPROXY":   "",
		"GOFLAGS":     "-mod=mod -modcacherw",
		"GOWORK":      "off",
		"GOTOOLCHAIN": "local",
		"GOBIN":       filepath.Join(dir, "gobin"),
	}
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return &Consumer{Dir: dir, Env: env, Progress: func(string, ...any) {}}, nil
}

// fileURL returns the file:// URL of an absolute directory.
func fileURL(dir string) string {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	return "file://" + p
}

func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Check creates a consumer module for m, runs `go get m@v` in it, builds a
// program that imports every package m offers and uses an exported name of
// each, runs it, and builds m's commands. It returns a one-line summary.
func (c *Consumer) Check(r *Repo, m *Module, v string) (string, error) {
	pkgs, err := Packages(r, m)
	if err != nil {
		return "", err
	}
	var libs, cmds []Package
	for _, p := range pkgs {
		if p.Main {
			cmds = append(cmds, p)
		} else {
			libs = append(libs, p)
		}
	}
	name := strings.ReplaceAll(m.Dir, "/", "_")
	if m.Dir == "." {
		name = "root"
	}
	dir := filepath.Join(c.Dir, "consumers", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	gomod := "module example.com/consumer/" + name + "\n\ngo 1.25\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return "", err
	}
	if _, err := c.run(dir, "go", "get", m.Path+"@"+v); err != nil {
		return "", err
	}
	src, err := consumerProgram(m, v, libs)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin") + string(filepath.Separator)
	if _, err := c.run(dir, "go", "build", "-o", bin+"consumer", "."); err != nil {
		return "", err
	}
	out, err := c.run(dir, bin+"consumer")
	if err != nil {
		return "", err
	}
	if got := strings.Count(out, "\n"); got != len(libs) {
		return "", fmt.Errorf("the consumer program printed %d lines, want one per package (%d):\n%s", got, len(libs), out)
	}
	if len(cmds) > 0 {
		args := []string{"build", "-o", bin}
		for _, p := range cmds {
			args = append(args, p.ImportPath)
		}
		if _, err := c.run(dir, "go", args...); err != nil {
			return "", err
		}
	}
	installed := ""
	if len(cmds) > 0 && len(m.File.Replace) == 0 {
		// go install cmd@version refuses a module whose go.mod has replace
		// directives; one without them must install this way.
		for _, p := range cmds {
			if _, err := c.run(dir, "go", "install", p.ImportPath+"@"+v); err != nil {
				return "", err
			}
		}
		installed = " and installed with go install"
	}
	return fmt.Sprintf("go get %s@%s; %d package(s) imported and run, %d command(s) built%s",
		m.Path, v, len(libs), len(cmds), installed), nil
}

// run runs a command in dir and returns its combined output; an error
// carries the command and the end of its output.
func (c *Consumer) run(dir, name string, args ...string) (string, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	c.Progress("  %s", line)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = c.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %v\n%s", line, err, tail(string(out), outputTail))
	}
	return string(out), nil
}

// tail returns the last n lines of s, indented.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// consumerProgram returns a main package that imports every package in pkgs,
// refers to an exported name of each, and prints one line per package.
func consumerProgram(m *Module, v string, pkgs []Package) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by the release tool; DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "// A user's program that imports every package of %s %s.\npackage main\n\n", m.Path, v)
	b.WriteString("import (\n\t\"fmt\"\n\n")
	for i, p := range pkgs {
		if p.Use == "" {
			// Nothing exported to name: importing it must still compile.
			fmt.Fprintf(&b, "\t_ %q\n", p.ImportPath)
			continue
		}
		fmt.Fprintf(&b, "\tp%d %q\n", i, p.ImportPath)
	}
	b.WriteString(")\n\n")
	for i, p := range pkgs {
		switch p.UseKind {
		case token.TYPE:
			fmt.Fprintf(&b, "var _ *p%d.%s\n", i, p.Use)
		case token.FUNC, token.VAR, token.CONST:
			fmt.Fprintf(&b, "var _ = p%d.%s\n", i, p.Use)
		}
	}
	b.WriteString("\nfunc main() {\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "\tfmt.Println(%q)\n", strings.TrimSpace(p.ImportPath+" "+p.Use))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
