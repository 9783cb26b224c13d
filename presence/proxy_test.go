package presence_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// proxy forwards TCP connections to a NATS server and can cut them all,
// refusing new ones until healed: a node cut off from its engine.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cutOff bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// startProxy forwards to the server at natsURL and returns the proxy's URL.
func startProxy(t *testing.T, natsURL string) (*proxy, string) {
	t.Helper()
	u, err := url.Parse(natsURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: u.Host, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() { _ = ln.Close(); p.cut(); p.wg.Wait() })
	return p, "nats://" + ln.Addr().String()
}

func (p *proxy) accept() {
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

// cut closes every forwarded connection and refuses new ones.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// heal accepts connections again.
func (p *proxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = false
}
