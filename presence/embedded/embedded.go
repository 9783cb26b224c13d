// Package embedded runs a NATS server with JetStream inside the process
// ([Start]), or a cluster of them ([StartCluster]): the engine of a single
// presence node or jobs worker, and of the tests. It is a package of its own so that
// gateways that use a real NATS cluster do not build the server into
// their binary.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
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
	// StoreDir holds JetStream's data. Set it: Start does not check it,
	// and empty leaves the choice to the server, which then stores under
	// the system's temporary directory, in the one place every such server
	// shares.
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

// Start starts a server and returns it once it accepts clients. It
// returns the server's error for options it refuses, and [ErrNotReady]
// (having stopped the server) if its listeners are not up in time. The
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

// clusterWithin bounds the wait for a new cluster's JetStream meta
// leader with every server a current peer; it takes under a second.
const clusterWithin = 20 * time.Second

// ErrNoMetaLeader is returned by StartCluster when the servers have not
// elected a JetStream meta leader with every server a current peer
// within twenty seconds.
var ErrNoMetaLeader = errors.New("embedded: no JetStream meta leader with every server a peer")

// ErrClusterSize is returned by [StartCluster] for a cluster of fewer than
// one server.
var ErrClusterSize = errors.New("embedded: a cluster has at least one server")

// clusterTries is how many times StartCluster picks new ports for a
// server that could not listen: a port found free may be taken by another
// socket before the server binds it.
const clusterTries = 3

// StartCluster starts n servers in the process, routed to each other as
// the cluster name, on 127.0.0.1 and free ports, each storing in a
// directory of its own under dir. The servers are named name1 to name<n>.
// It returns them once JetStream has a meta leader with all n servers as
// its peers, so that a replicated stream can be created at once:
// listeners being up, all that Start waits for, is not enough for that.
// It returns [ErrClusterSize] for n below 1, [ErrNotReady] if a server
// does not start (after trying new ports twice), [ErrNoMetaLeader] if no
// leader is elected within twenty seconds, and the server's error for
// options it refuses; on an error no server is left running. The caller
// ends each server with Shutdown and WaitForShutdown.
func StartCluster(name string, n int, dir string) ([]*server.Server, error) {
	if n < 1 {
		return nil, ErrClusterSize
	}
	var err error
	for try := range clusterTries {
		var servers []*server.Server
		servers, err = startCluster(name, n, filepath.Join(dir, fmt.Sprint(try)))
		if !errors.Is(err, ErrNotReady) {
			return servers, err
		}
	}
	return nil, err
}

// startCluster is one try of StartCluster.
func startCluster(name string, n int, dir string) ([]*server.Server, error) {
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
	}
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", p)
	}
	servers := make([]*server.Server, 0, n)
	stopAll := func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	for i := range n {
		s, err := Start(Options{
			Name:     fmt.Sprintf("%s%d", name, i+1),
			StoreDir: filepath.Join(dir, fmt.Sprintf("%s%d", name, i+1)),
			Cluster:  ClusterOptions{Name: name, Host: "127.0.0.1", Port: ports[i], Routes: routes},
		})
		if err != nil {
			stopAll()
			return nil, err
		}
		servers = append(servers, s)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	give := time.After(clusterWithin)
	for {
		for _, s := range servers {
			if s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) == n {
				return servers, nil
			}
		}
		select {
		case <-t.C:
		case <-give:
			stopAll()
			return nil, ErrNoMetaLeader
		}
	}
}
