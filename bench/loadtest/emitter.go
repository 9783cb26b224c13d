package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// Emitter writes a child's messages to its standard output, one JSON line
// each. It is safe for concurrent use.
type Emitter[S any] struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewEmitter returns an Emitter that writes to w.
func NewEmitter[S any](w io.Writer) *Emitter[S] {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &Emitter[S]{enc: enc}
}

// Emit writes m. A write error is dropped: it means that the parent has
// gone, and the end of standard input will tell the child so.
func (e *Emitter[S]) Emit(m Message[S]) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.enc.Encode(m)
}

// Finish ends a child's run, which returned err, and returns the child's
// exit status. An error other than context.Canceled (the child was
// interrupted, and its parent knows why) goes to the parent as an error
// message, and the status is then ExitFail; otherwise it is ExitPass.
func (e *Emitter[S]) Finish(err error) int {
	if err != nil && !errors.Is(err, context.Canceled) {
		e.Emit(Message[S]{Event: EventError, Error: err.Error()})
		return ExitFail
	}
	return ExitPass
}

// Commands delivers the parent's commands, read from r (a child's standard
// input) one a line. The channel is closed at the end of r.
func Commands(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}
