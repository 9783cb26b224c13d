// Package embedded runs a NATS server with JetStream inside the process:
// the engine of a single presence node, and of the tests. It is a package
// of its own so that gateways that use a real NATS cluster do not build
// the server into their binary.
package embedded

import (
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyWithin bounds the wait for the server's listeners; it is ready in
// tens of milliseconds.
const readyWithin = 10 * time.Second

// ErrNotReady is returned by Start when the server's listeners are not up
// within ten seconds.
var ErrNotReady = errors.New("embedded: NATS server not ready")

// Options configure an embedded server.
type Options struct {
	// Name is the server's name; empty means "presence".
	Name string
	// Host and Port are where clients connect; empty and 0 mean 127.0.0.1
	// and a free port.
	Host string
	Port int
	// StoreDir holds JetStream's data; required.
	StoreDir string
	// Cluster, when its Port is not 0, joins the server to a cluster of
	// the given name, listening for routes on Host:Port, with Routes.
	Cluster ClusterOptions
}

// ClusterOptions join an embedded server to a cluster.
type ClusterOptions struct {
	Name   string
	Host   string
	Port   int
	Routes []string // nats-route://host:port of every server
}

// Start starts a server and returns it once it accepts clients. The
// caller ends it with Shutdown and WaitForShutdown.
func Start(o Options) (*server.Server, error) {
	if o.Name == "" {
		o.Name = "presence"
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	port := o.Port
	if port == 0 {
		port = -1 // a free port
	}
	opts := &server.Options{
		ServerName: o.Name, Host: o.Host, Port: port,
		JetStream: true, StoreDir: o.StoreDir, NoSigs: true, NoLog: true,
	}
	if o.Cluster.Port != 0 {
		opts.Cluster = server.ClusterOpts{Name: o.Cluster.Name, Host: o.Cluster.Host, Port: o.Cluster.Port}
		opts.Routes = server.RoutesFromStr(strings.Join(o.Cluster.Routes, ","))
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(readyWithin) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, ErrNotReady
	}
	return s, nil
}
