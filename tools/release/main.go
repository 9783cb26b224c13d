// Command release checks that every published module of the repository
// installs with one `go get`, and prepares releases.
//
// Usage, from the repository (go -C tools runs it from anywhere in a clone):
//
//	go -C tools run ./release check [-version vX.Y.Z] [-keep]
//	go -C tools run ./release bump vX.Y.Z
//	go -C tools run ./release tags [vX.Y.Z]
//	go -C tools run ./release list
//
// check verifies the go.mod rules (see Verify), publishes the working tree of
// every published module as the release version on a file-system module
// proxy in a temporary directory, and for each published module builds and
// runs a fresh consumer module that gets it from that proxy with no replace
// directive, imports each of its packages, and builds its commands (and
// installs them with go install <command>@<version> when the module's go.mod
// has no replace directive, as go install requires). The release version is the one at which the repository's
// modules require one another, unless -version names it. It prints one line
// per module and exits 1 if anything fails.
//
// bump sets every requirement on a module of the repository, in every go.mod,
// to the version given. tags prints the git tag of each published module for
// a version (by default the release version). list prints every module and
// whether it is published.
//
// Published: the root module and every other module except those under
// bench/ or tools/, those with a path element named cmd (commands of their
// own, run from a clone), and those whose go.mod has a comment line starting
// with "// unpublished:".
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// errNoRepo reports that no repository was found above the working directory.
var errNoRepo = errors.New("no .git above the working directory: pass -root")

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errFailed) {
			fmt.Fprintln(os.Stderr, "release:", err)
		}
		os.Exit(1)
	}
}

// errFailed means the failures are already printed.
var errFailed = errors.New("check failed")

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  release check [-root dir] [-version vX.Y.Z] [-keep]
  release bump [-root dir] vX.Y.Z
  release tags [-root dir] [vX.Y.Z]
  release list [-root dir]
`)
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errors.New("no command")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "the repository root (default: the nearest directory above holding .git)")
	version := fs.String("version", "", "check: the release version (default: the version the modules require one another at)")
	keep := fs.Bool("keep", false, "check: keep the proxy and the consumer modules, and print where")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *root == "" {
		var err error
		if *root, err = findRoot(); err != nil {
			return err
		}
	}
	r, err := Discover(*root)
	if err != nil {
		return err
	}
	switch args[0] {
	case "check":
		if fs.NArg() != 0 {
			return errors.New("check takes no arguments")
		}
		return check(r, *version, *keep, stdout, stderr)
	case "bump":
		if fs.NArg() != 1 {
			return errors.New("bump takes one version")
		}
		return bump(r, fs.Arg(0), stdout)
	case "tags":
		v, err := versionArg(r, fs)
		if err != nil {
			return err
		}
		for _, m := range r.Published() {
			fmt.Fprintln(stdout, m.Tag(v))
		}
		return nil
	case "list":
		for _, m := range r.Modules {
			state := "published"
			if !m.Published {
				state = "unpublished (" + m.Why + ")"
			}
			fmt.Fprintf(stdout, "%-*s %s: %s\n", dirWidth(r), m.Dir, m.Path, state)
		}
		return nil
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

// versionArg returns the version named on the command line, or else the
// release version.
func versionArg(r *Repo, fs *flag.FlagSet) (string, error) {
	switch fs.NArg() {
	case 0:
		return ReleaseVersion(r)
	case 1:
		return fs.Arg(0), CheckVersion(fs.Arg(0))
	}
	return "", errors.New("too many arguments")
}

// findRoot returns the nearest directory, from the working directory up,
// that holds a .git entry (a directory in a clone, a file in a worktree).
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNoRepo
		}
		dir = parent
	}
}
