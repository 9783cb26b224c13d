package presence_test

import (
	"testing"

	"github.com/go-schedule/schedule/presence/internal/tcpproxy"
	"github.com/stretchr/testify/require"
)

// startProxy starts a proxy to the server at natsURL for the test and
// returns it and the URL to connect to instead.
func startProxy(t *testing.T, natsURL string) (*tcpproxy.Proxy, string) {
	t.Helper()
	p, url, err := tcpproxy.Start(natsURL)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p, url
}
