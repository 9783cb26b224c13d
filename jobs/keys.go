package jobs

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"

	"github.com/go-schedule/schedule/presence"
)

// MaxKey is the longest job key, in bytes.
const MaxKey = 256

// MaxPayload is the largest payload, in bytes (64 KiB).
const MaxPayload = 64 << 10

// Partitions is how many partitions a queue's jobs are spread over. A job's
// partition is a hash of its key; each live worker holds the partitions
// that rendezvous hashing gives it (see [Worker]). It is part of the wire
// format: changing it moves every stored job to another key.
const Partitions = 32

// maxName is the longest queue or node name.
const maxName = 64

var (
	// ErrInvalidKey is returned for a key that is empty, longer than
	// [MaxKey] bytes or not valid UTF-8.
	ErrInvalidKey = errors.New("jobs: a key is 1 to 256 bytes of UTF-8")
	// ErrPayloadTooLarge is returned for a payload over [MaxPayload] bytes.
	ErrPayloadTooLarge = errors.New("jobs: a payload is at most 64 KiB")
	// ErrInvalidName is returned for a queue or node name that is not 1 to
	// 64 characters of [A-Za-z0-9_-].
	ErrInvalidName = errors.New("jobs: a queue or node name is 1 to 64 characters of [A-Za-z0-9_-]")
)

// ValidKey reports whether key is a job key: 1 to [MaxKey] bytes of valid
// UTF-8. Any such string is a key, spaces, dots, '*', '>' and non-ASCII
// included; case matters.
func ValidKey(key string) bool {
	return len(key) >= 1 && len(key) <= MaxKey && utf8.ValidString(key)
}

// ValidName reports whether s is a queue or node name: 1 to 64 characters
// of [A-Za-z0-9_-]. Such a name is a bucket-name suffix and a KV key as it
// is.
func ValidName(s string) bool {
	return len(s) <= maxName && presence.ValidNodeID(s)
}

// partitionOf returns the partition of key.
func partitionOf(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % Partitions)
}

// partitionPrefix is the first token of every KV key in partition p: two
// lower-case hex digits.
func partitionPrefix(p int) string { return fmt.Sprintf("%02x", p) }

// kvKey returns the KV key of job key: its partition, a dot, and the key
// escaped by presence.EncodeKey (letters, digits and '-' as they are, any
// other byte as '_' and two hex digits), which never holds a dot.
func kvKey(key string) string {
	return partitionPrefix(partitionOf(key)) + "." + presence.EncodeKey(key)
}

// jobKey returns the job key of a KV key, and false if kvKey made no such
// key.
func jobKey(k string) (string, bool) {
	p, enc, ok := strings.Cut(k, ".")
	if !ok || len(p) != 2 {
		return "", false
	}
	key, ok := presence.DecodeKey(enc)
	if !ok || partitionPrefix(partitionOf(key)) != p {
		return "", false
	}
	return key, true
}

// partitionOfKV returns the partition of a KV key made by kvKey, or -1.
func partitionOfKV(k string) int {
	if len(k) < 3 || k[2] != '.' {
		return -1
	}
	var p int
	for i := 0; i < 2; i++ {
		c := k[i]
		switch {
		case c >= '0' && c <= '9':
			p = p<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			p = p<<4 | int(c-'a'+10)
		default:
			return -1
		}
	}
	if p >= Partitions {
		return -1
	}
	return p
}
