package presence

import (
	"log/slog"
	"time"
)

// Defaults of Config.
const (
	// DefaultLease is how long a node may go without refreshing its lease
	// before the others record its devices lost.
	DefaultLease = 15 * time.Second
	// DefaultPrefix names the buckets and subjects.
	DefaultPrefix = "presence"
	// scanLeases and scanFloor make ScanEvery when it is not set: four
	// leases, at least a minute. The scan repairs what the expiry markers
	// and the listing each lease missed, within a minute; it reads every
	// record, so a short lease, chosen for fast detection, must not make
	// it a scan of the whole fleet every few seconds.
	scanLeases = 4
	scanFloor  = time.Minute
	// markerKeep is how long the nodes bucket keeps a lease's expiry
	// marker: far longer than any watcher stall, and the listing repairs
	// what a longer absence misses.
	markerKeep = time.Hour
)

// Config configures a Node.
type Config struct {
	// Node is this node's id: 1 to 64 characters of [A-Za-z0-9_-], unique
	// among the live nodes of the fleet.
	Node string
	// Lease is how long the node may be silent before the others declare
	// it lost: whole seconds, at least 1s. Zero means [DefaultLease].
	Lease time.Duration
	// Replicas is the replica count of the buckets Open creates when they
	// are missing: 1 to 5. Zero means 1. Existing buckets are used as
	// they are.
	Replicas int
	// Prefix names the buckets ("<prefix>-devices", "<prefix>-nodes")
	// and the kick subject. Empty means [DefaultPrefix].
	Prefix string
	// ScanEvery is how often the live node with the smallest id scans
	// every record for devices online at a node without a lease. Zero
	// (or a negative duration) means four leases, at least a minute.
	ScanEvery time.Duration
	// Logger receives what the node does about its lease and reaping.
	// Nil discards it.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set, or an error for a bad
// field.
func (c Config) withDefaults() (Config, error) {
	if !ValidNodeID(c.Node) {
		return c, ErrInvalidNodeID
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if !ValidLease(c.Lease) {
		return c, ErrInvalidLease
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		return c, ErrInvalidReplicas
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.ScanEvery <= 0 {
		c.ScanEvery = max(scanLeases*c.Lease, scanFloor)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// ValidLease reports whether d is a lease: a whole number of seconds, at
// least one, because the engine keeps key TTLs in whole seconds.
func ValidLease(d time.Duration) bool {
	return d >= time.Second && d%time.Second == 0
}
