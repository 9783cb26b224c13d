package jobs

// AttemptAt runs the attempt of job key recorded at revision rev, as a
// fire of this worker's heap would.
func (w *Worker) AttemptAt(key string, rev uint64) { w.attempt(kvKey(key), rev) }

// KVKey is kvKey, for tests that read the engine directly.
func KVKey(key string) string { return kvKey(key) }

// Held returns how many partitions the worker holds.
func (w *Worker) Held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, pw := range w.held {
		if pw != nil {
			n++
		}
	}
	return n
}
