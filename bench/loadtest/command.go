package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// The exit statuses of a load command.
const (
	// ExitPass: every count of go-schedule's was exact.
	ExitPass = 0
	// ExitFail: a count of go-schedule's was wrong, or the run failed.
	ExitFail = 1
	// ExitUsage: invalid flags or arguments.
	ExitUsage = 2
)

// exitStatuses is the last line of a load command's usage message.
const exitStatuses = "Exit status: 0 pass (a baseline's wrong count is reported, not failed); 1 a count of go-schedule's is wrong or the run failed; 2 invalid flags."

// RoleFlag names the flag that makes a process a child: Start puts -role
// and the child's role first on its command line, and RunChild parses it.
const RoleFlag = "role"

// The roles of a child: a server process, or a load process.
const (
	RoleServer = "server"
	RoleLoader = "loader"
)

// ChildEnv is set to "1" in every child's environment. A test binary that
// runs a command's code checks it (see InChild) before the testing package
// parses the command line, which is the child's and not the test's.
const ChildEnv = "GO_SCHEDULE_LOADTEST_CHILD"

// Func is a load command's body: main with its context, its command line
// without the program's name, and its standard streams made explicit. It
// returns the exit status.
type Func func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// Main runs f as the program's main and exits with its status. f's context
// ends at the first interrupt (Ctrl-C) or SIGTERM; after that the signals'
// default handling is back, so that a second one ends the program at once
// even if the wrap-up hangs.
func Main(f Func) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	code := f(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// RunIfChild makes a test binary that runs a command's code act as the
// child it was started as: if InChild, it runs f with the process's command
// line and standard streams and exits with its status; otherwise it
// returns. Call it first in TestMain, before the testing package parses the
// command line, which is the child's.
func RunIfChild(f Func) {
	if InChild() {
		os.Exit(f(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
}

// IsChild reports whether args, the command line without the program's
// name, are a child's: they start with -role or --role.
func IsChild(args []string) bool {
	return len(args) > 0 && (args[0] == "-"+RoleFlag || args[0] == "--"+RoleFlag)
}

// InChild reports whether this process was started by Start, as a child.
func InChild() bool { return os.Getenv(ChildEnv) == "1" }

// NewFlagSet returns a flag set for a load command called name, which
// writes its messages to output and returns errors from Parse rather than
// exiting. Its usage message says "usage: name [flags]", then the lines of
// about, the flags, and the exit statuses.
func NewFlagSet(name string, output io.Writer, about ...string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s [flags]\n\n", name)
		for _, line := range about {
			fmt.Fprintln(w, line)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
		fmt.Fprintln(w)
		fmt.Fprintln(w, exitStatuses)
	}
	return fs
}

// Parse parses args with fs and refuses arguments left over after the
// flags. Its error is flag.ErrHelp for -h and -help.
// A bad flag's error is left to the caller, which prints it first with a
// one-line hint (see Command); the usage is printed for -h only.
func Parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if usage != nil {
				usage()
			} else {
				fs.PrintDefaults()
			}
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// Command returns the body of a load command called name. A process
// started with -role (see IsChild) is a child and runs child; any other is
// the parent: it parses its command line with parse, which writes its
// usage messages to stderr, and runs load on the configuration. load writes
// the report to stdout and its progress to stderr, and returns the counts
// that were wrong, or an error if the run itself failed (a broken run). The
// parent writes the error, or the verdict on the counts (see Judge), to
// stderr, prefixed with name.
//
// The parent's last line is its verdict: PASS, or FAIL with the reason.
// Its exit status is ExitPass for -h, and when no count of
// go-schedule's was wrong (a baseline's wrong count is reported, and does
// not fail the run); ExitUsage for invalid flags; ExitFail for a broken run
// or a wrong count of go-schedule's.
func Command[C any](name string,
	parse func(args []string, output io.Writer) (C, error),
	load func(ctx context.Context, c C, stdout, stderr io.Writer) (failures []Failure, err error),
	child Func) Func {
	return func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		if IsChild(args) {
			return child(ctx, args, stdin, stdout, stderr)
		}
		cfg, err := parse(args, stderr)
		if errors.Is(err, flag.ErrHelp) {
			return ExitPass
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			fmt.Fprintf(stderr, "run '%s -h' for the flags\n", name)
			return ExitUsage
		}
		bad, err := load(ctx, cfg, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "%s: FAIL: the run failed: %v\n", name, err)
			return ExitFail
		}
		return Judge(name, bad, stderr)
	}
}

// ListenAddr is where a server process listens unless told otherwise: a
// port of the system's choosing on 127.0.0.1, outside every load process's
// source network (see Loopback).
const ListenAddr = "127.0.0.1:0"

// ServerConfig is what the parent tells every server process on its
// command line, besides what its command adds.
type ServerConfig struct {
	Mode    string // which server to run, in the command's own words
	Listen  string // the address to listen on
	Workers int    // go-schedule's pool size
	Profile string // a file for a CPU profile of the window, or ""
}

// Register defines c's flags in fs, for a child that parses them.
func (c *ServerConfig) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Mode, "mode", "", "server: which server to run")
	fs.StringVar(&c.Listen, "listen", ListenAddr, "server: address to listen on")
	fs.IntVar(&c.Workers, "workers", 4, "server: go-schedule's pool size")
	fs.StringVar(&c.Profile, "cpuprofile", "", "server: file for a CPU profile of the window")
}

// Args returns the command-line arguments that Register parses back into
// c. An empty Listen or Profile is left out: the child then listens on
// ListenAddr, and writes no profile.
func (c ServerConfig) Args() []string {
	args := []string{"-mode", c.Mode, "-workers", strconv.Itoa(c.Workers)}
	if c.Listen != "" {
		args = append(args, "-listen", c.Listen)
	}
	if c.Profile != "" {
		args = append(args, "-cpuprofile", c.Profile)
	}
	return args
}

// Roles is what a command's children run, for RunChild.
type Roles[S any] struct {
	// Name names the child's flag set in its messages ("idleload child").
	Name string
	// Flags, if not nil, defines the command's own flags in fs: what its
	// servers and its load processes need besides ServerConfig and
	// LoadConfig.
	Flags func(fs *flag.FlagSet)
	// Server runs a server process (see Serve), Loader a load process (see
	// RunLoader), each with the configuration the parent gave it and until
	// the end of cmds.
	Server func(ctx context.Context, c ServerConfig, out *Emitter[S], cmds <-chan string) error
	Loader func(ctx context.Context, c LoadConfig, out *Emitter[S], cmds <-chan string) error
}

// RunChild runs a child of a load command: args, which start with -role,
// say which of r's roles to play and with what flags. The child reads the
// parent's commands from stdin and writes its messages to stdout (see
// Emitter), and its flag errors to stderr. It returns the exit status:
// ExitUsage for flags it cannot parse, ExitFail after it has sent the
// parent an error, ExitPass otherwise.
func RunChild[S any](ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, r Roles[S]) int {
	var sc ServerConfig
	var lc LoadConfig
	fs := flag.NewFlagSet(r.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String(RoleFlag, "", RoleServer+" or "+RoleLoader)
	sc.Register(fs)
	lc.Register(fs)
	if r.Flags != nil {
		r.Flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	out := NewEmitter[S](stdout)
	cmds := Commands(stdin)
	var err error
	switch *role {
	case RoleServer:
		err = r.Server(ctx, sc, out, cmds)
	case RoleLoader:
		err = r.Loader(ctx, lc, out, cmds)
	default:
		err = fmt.Errorf("unknown role %q", *role)
	}
	return out.Finish(err)
}
