// Package jsonl writes the JSON lines the jobs commands print: one object
// per line, each written whole, keys and payloads as given (no HTML
// escaping).
package jsonl

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// Writer writes one JSON object per line to an io.Writer. Its Write is
// safe for concurrent use; lines never interleave.
type Writer struct {
	mu  sync.Mutex
	out io.Writer
	buf bytes.Buffer
}

// New returns a Writer to out.
func New(out io.Writer) *Writer { return &Writer{out: out} }

// Write writes v as one line. It returns the error of the encoding or of
// the write.
func (w *Writer) Write(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.out.Write(w.buf.Bytes())
	return err
}
