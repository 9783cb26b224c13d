// Package wire is a bare MQTT client for tests and load generation: it
// writes CONNECT, PINGREQ and PUBLISH packets on a connection of the
// caller's and reads packets back, and nothing else. It never pings by
// itself, so a Conn that stops writing is silent, as far as the broker
// can tell, until it is closed.
package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/mochi-mqtt/server/v2/packets"
)

// Options describe the CONNECT a Conn sends.
type Options struct {
	ClientID  string
	Version   byte   // 4 for MQTT 3.1.1 (the default), 5 for MQTT 5
	KeepAlive uint16 // seconds; 0: no keep-alive
	// WillTopic, when set, gives the connection a will with WillPayload
	// ("offline" when empty: mochi refuses an empty will payload), at QoS
	// 0, not retained.
	WillTopic   string
	WillPayload []byte
	// Persistent asks for a session that outlives the connection (clean
	// session off). The default is a clean session.
	Persistent bool
}

// Conn is one MQTT connection.
type Conn struct {
	net.Conn
	// Connack is the CONNACK the broker sent, after its fixed header.
	Connack []byte
	r       *bufio.Reader
}

// ErrRefused is returned by Connect when the broker refuses the
// connection; it wraps the reason code.
var ErrRefused = errors.New("wire: connection refused")

// Connect sends CONNECT on c and waits for CONNACK. It returns a Conn on
// c when the broker accepted the connection. On an error it does not close
// c.
func Connect(c net.Conn, o Options) (*Conn, error) {
	v := o.Version
	if v == 0 {
		v = 4
	}
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: v,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			Clean:            !o.Persistent,
			Keepalive:        o.KeepAlive,
			ClientIdentifier: o.ClientID,
		},
	}
	if o.WillTopic != "" {
		pk.Connect.WillFlag = true
		pk.Connect.WillTopic = o.WillTopic
		pk.Connect.WillPayload = o.WillPayload
		if len(o.WillPayload) == 0 {
			pk.Connect.WillPayload = []byte("offline")
		}
	}
	var buf bytes.Buffer
	if err := pk.ConnectEncode(&buf); err != nil {
		return nil, err
	}
	if _, err := c.Write(buf.Bytes()); err != nil {
		return nil, err
	}
	w := &Conn{Conn: c, r: bufio.NewReaderSize(c, 64)}
	typ, body, err := w.ReadPacket()
	if err != nil {
		return nil, fmt.Errorf("wire: reading CONNACK: %w", err)
	}
	if typ != packets.Connack || len(body) < 2 {
		return nil, fmt.Errorf("wire: expected CONNACK, got packet type %d", typ)
	}
	if body[1] != 0 {
		return nil, fmt.Errorf("%w: reason code %#x", ErrRefused, body[1])
	}
	w.Connack = body
	return w, nil
}

// pingreq is a whole PINGREQ packet.
var pingreq = []byte{packets.Pingreq << 4, 0}

// Ping writes a PINGREQ. It does not wait for the PINGRESP: read it with
// ReadPacket.
func (c *Conn) Ping() error {
	_, err := c.Write(pingreq)
	return err
}

// disconnect is a whole DISCONNECT packet (MQTT 3.1.1; in MQTT 5, reason
// code 0, normal disconnection).
var disconnect = []byte{packets.Disconnect << 4, 0}

// Disconnect writes DISCONNECT, so that the broker discards the will, and
// closes the connection.
func (c *Conn) Disconnect() error {
	_, err := c.Write(disconnect)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return err
}

// Publish writes a QoS 0 PUBLISH of payload to topic.
func (c *Conn) Publish(topic string, payload []byte, version byte) error {
	if version == 0 {
		version = 4
	}
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish},
		ProtocolVersion: version,
		TopicName:       topic,
		Payload:         payload,
	}
	var buf bytes.Buffer
	if err := pk.PublishEncode(&buf); err != nil {
		return err
	}
	_, err := c.Write(buf.Bytes())
	return err
}

// ReadPacket reads the next packet and returns its type and the bytes
// after its fixed header. At the end of the connection it returns io.EOF
// or the read error.
func (c *Conn) ReadPacket() (typ byte, body []byte, err error) {
	b, err := c.r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, _, err := packets.DecodeLength(c.r)
	if err != nil {
		return 0, nil, err
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return 0, nil, err
	}
	return b >> 4, body, nil
}

// WaitClosed reads, discarding packets, until the connection ends, and
// returns nil when the broker closed it (EOF or reset) and the error
// otherwise (a read deadline that passed, for instance).
func (c *Conn) WaitClosed() error {
	for {
		_, _, err := c.ReadPacket()
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isReset(err):
			return nil
		default:
			return err
		}
	}
}

// isReset reports whether err says the peer reset the connection.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
