package schedule_test

import (
	"testing"

	"github.com/go-schedule/schedule/internal/schedtest"
)

// FuzzSchedulerMatchesModel decodes the input into a sequence of
// operations (see decodeOps) and replays it against both cancel strategies
// and the reference model in model_test.go. The seeds below and the corpus
// in testdata/fuzz/FuzzSchedulerMatchesModel run in every go test.
func FuzzSchedulerMatchesModel(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(randomOps(1000+seed, modelMaxOps))
	}
	// A dense burst: many tasks, frequent resets and cancels, short steps.
	var dense []byte
	for i := range 64 {
		dense = append(dense, encodeOp(mScheduleOne, uint8(i), uint16(i*37))...)
		dense = append(dense, encodeOp(mReset, uint8(i/2), uint16(i*11))...)
		dense = append(dense, encodeOp(mAdvance, 0, 7)...)
	}
	f.Add(dense)
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := decodeOps(data)
		for _, st := range schedtest.Strategies {
			runModel(t, st, workersFor(data), ops)
			if t.Failed() {
				return
			}
		}
	})
}
