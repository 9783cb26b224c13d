package schedule

import (
	"reflect"

	"github.com/panjf2000/ants/v2"
)

// nonblocking reports whether Submit on p returns at once when every worker
// is busy (ants.WithNonblocking(true)), and whether that could be told.
//
// ants exposes a pool's options to no one, and the scheduler must never
// call a Submit that can wait (see runner.go), so WithPool reads the flag
// where ants v2 keeps it, and refuses a pool when it cannot (known false).
// TestWithPoolRejectsABlockingPool pins that layout: an ants release that
// moves it fails that test before it refuses a user's pool.
func nonblocking(p *ants.Pool) (nonblocking, known bool) {
	v := reflect.ValueOf(p).Elem()
	common := v.FieldByName("poolCommon")
	if !common.IsValid() || common.Kind() != reflect.Pointer || common.IsNil() {
		return false, false
	}
	opts := common.Elem().FieldByName("options")
	if !opts.IsValid() || opts.Kind() != reflect.Pointer || opts.IsNil() {
		return false, false
	}
	f := opts.Elem().FieldByName("Nonblocking")
	if !f.IsValid() || f.Kind() != reflect.Bool {
		return false, false
	}
	return f.Bool(), true
}
