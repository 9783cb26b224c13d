// Package tcpproxy forwards TCP connections to a NATS server and can cut
// them, for tests of a node cut off from its engine over real TCP.
package tcpproxy

import (
	"io"
	"net"
	"net/url"
	"sync"
)

// Proxy forwards TCP connections to a NATS server and can cut them all,
// refusing new ones until healed: a node cut off from its engine.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cutOff bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Start forwards to the NATS server at natsURL and returns the proxy and
// the URL to connect to instead.
func Start(natsURL string) (*Proxy, string, error) {
	u, err := url.Parse(natsURL)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	p := &Proxy{ln: ln, target: u.Host, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	return p, "nats://" + ln.Addr().String(), nil
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cutOff {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(s, c); _ = s.Close() })
		p.wg.Go(func() { _, _ = io.Copy(c, s); _ = c.Close() })
	}
}

// Cut closes every forwarded connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Heal accepts connections again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = false
}
