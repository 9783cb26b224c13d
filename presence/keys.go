package presence

import "strings"

// maxDeviceID is the longest device id, in bytes.
const maxDeviceID = 128

// ValidDeviceID reports whether id is a device id: 1 to 128 bytes, each a
// printable ASCII character other than space (0x21–0x7E).
func ValidDeviceID(id string) bool {
	if len(id) == 0 || len(id) > maxDeviceID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// keepInKey reports whether b stands for itself in a key. Every other byte,
// '_' included, is escaped, so that decoding is unambiguous; '.' is escaped
// because it separates subject tokens, and '/' and '=' for simplicity.
func keepInKey(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-'
}

// keptInKey reports whether every byte of s stands for itself in a key.
func keptInKey(s string) bool {
	for i := 0; i < len(s); i++ {
		if !keepInKey(s[i]) {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789ABCDEF"

// EncodeKey returns the key of device id in the devices bucket: letters,
// digits and '-' as they are, any other byte as '_' and two upper-case hex
// digits. The result holds only characters a NATS KV key allows, never
// '.', and DecodeKey gives id back. It does not check id.
func EncodeKey(id string) string {
	var b strings.Builder
	b.Grow(len(id))
	for i := 0; i < len(id); i++ {
		c := id[i]
		if keepInKey(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

// DecodeKey returns the device id that EncodeKey made key from, and false
// if no EncodeKey result is key.
func DecodeKey(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(key))
	for {
		// A run of bytes that stand for themselves, then an escape or the end.
		plain, escaped, found := strings.Cut(key, "_")
		if !keptInKey(plain) {
			return "", false
		}
		b.WriteString(plain)
		if !found {
			return b.String(), true
		}
		if len(escaped) < 2 {
			return "", false
		}
		hi, lo := unhex(escaped[0]), unhex(escaped[1])
		if hi < 0 || lo < 0 {
			return "", false
		}
		v := byte(hi<<4 | lo)
		if keepInKey(v) {
			return "", false // EncodeKey never escapes it
		}
		b.WriteByte(v)
		key = escaped[2:]
	}
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// maxNodeID is the longest node id.
const maxNodeID = 64

// ValidNodeID reports whether id is a node id: 1 to 64 characters of
// [A-Za-z0-9_-]. Such an id is a KV key and a subject token as it is.
func ValidNodeID(id string) bool {
	if len(id) == 0 || len(id) > maxNodeID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !keepInKey(c) && c != '_' {
			return false
		}
	}
	return true
}
