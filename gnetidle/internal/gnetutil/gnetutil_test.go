package gnetutil_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/go-schedule/schedule/gnetidle/internal/gnetutil"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

func TestStopIsIdempotentAndDoneIsClosedAfter(t *testing.T) {
	g, err := gnetutil.Serve(new(gnet.BuiltinEventEngine), "127.0.0.1:0", gnet.WithLogger(gnetutil.Logger(io.Discard, "")))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, g.Stop(ctx))
	assert.NoError(t, g.Stop(ctx), "a second Stop")
	select {
	case <-g.Done():
	default:
		t.Fatal("Done is not closed after Stop")
	}
	assert.NoError(t, g.Err())
}
