// Package loadtest is the plumbing shared by the repository's load commands
// (mqtt/cmd/mqttload and gnetidle/cmd/idleload, modules of their own that
// are run from a clone and never published). It imports
// only the standard library.
//
// A run is one parent process and its children: server processes (gateway
// shards, each listening on a loopback port of its own) and load processes,
// each the same program started again with -role first on its command line
// (see Start and IsChild). A load process connects clients to the servers:
// live ones that keep sending, and silent ones that stop at a moment of
// their own within the run's fall window, after which only a server can
// notice them. The parent measures how exactly and how late the servers
// closed the silent connections, and what it cost them.
//
// # The protocol
//
// The parent writes commands, one a line, to a child's standard input:
// CmdGo when every client is connected (the measured window starts), and
// CmdReport, to a server, when the window is over. The end of its standard
// input tells a child to finish and exit. A child writes messages, one JSON
// object a line (a Message), to its standard output:
//
//   - a server: EventReady with its address, once listening; EventResult
//     with its result, on CmdReport (see Serve);
//   - a load process: EventProgress with its counts, every ProgressEvery;
//     EventConnected once it has tried every connection; EventResult with
//     its LoadResult at the end of the window (see RunLoader);
//   - any child: EventError, when it fails (see Emitter.Finish).
//
// A child's standard error is passed through to the parent's.
//
// # The pieces
//
// Main, Command and RunChild are a load command's main, its parent's
// skeleton (flags, run, verdict, exit status) and its children's. Measure
// runs one set of servers and load processes through a window, from the
// parent; Serve and RunLoader are the two kinds of child's part. Spread,
// Share and Loopback plan a run's processes within the system's limits:
// the open files of one process (OpenFileLimit, FileMargin), and the
// ephemeral ports of one source address, which is why every load process
// dials from a loopback address of its own. Table, Check, Quantile,
// Median, Commas and the other format helpers build the reports.
package loadtest
