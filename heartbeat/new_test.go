package heartbeat_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/heartbeat"
	"github.com/go-schedule/schedule/internal/schedtest"
)

// Tests of heartbeat.New's arguments.

func TestNewRejectsBadArguments(t *testing.T) {
	s := schedtest.Strategies[0].Start(t, 1) // any scheduler will do
	expired := func(uint64) {}
	cases := []struct {
		name    string
		s       *schedule.Scheduler
		timeout time.Duration
		expired func(uint64)
		want    error
	}{
		{"nil scheduler", nil, time.Second, expired, heartbeat.ErrNilScheduler},
		{"zero timeout", s, 0, expired, heartbeat.ErrInvalidTimeout},
		{"negative timeout", s, -time.Second, expired, heartbeat.ErrInvalidTimeout},
		{"most negative timeout", s, math.MinInt64, expired, heartbeat.ErrInvalidTimeout},
		{"nil expired", s, time.Second, nil, heartbeat.ErrNilExpired},
	}
	for _, c := range cases {
		m, err := heartbeat.New(c.s, c.timeout, c.expired)
		assert.ErrorIs(t, err, c.want, c.name)
		assert.Nil(t, m, c.name)

		var withDeadline func(uint64, time.Time)
		if c.expired != nil {
			withDeadline = func(uint64, time.Time) {}
		}
		m, err = heartbeat.NewWithDeadline(c.s, c.timeout, withDeadline)
		assert.ErrorIs(t, err, c.want, "NewWithDeadline: "+c.name)
		assert.Nil(t, m, "NewWithDeadline: "+c.name)
	}
}
