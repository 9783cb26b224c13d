// Package presence records which devices are online, and at which gateway
// node, for a whole fleet of gateways, in NATS JetStream key-value buckets.
//
// Each gateway keeps its devices' heartbeats local (a
// [github.com/go-schedule/schedule/heartbeat.Monitor] on a go-schedule scheduler); only state changes reach the engine: a device
// that says hello is recorded online, a device that goes silent, closes its
// connection or is shut down with its node is recorded offline, and the
// devices of a node that dies are recorded offline by another node.
//
// # Buckets, keys and values
//
// A [Node] ([Open]) is a gateway's side; a [Store] ([OpenStore],
// [BindStore]) reads the fleet's presence for anyone else. Two buckets,
// named from [Config].Prefix (default "presence"):
//
//   - "<prefix>-devices" holds one record per device, history 1, no TTL.
//     Its key is the device id escaped reversibly into the characters a
//     key may hold ([EncodeKey]): letters, digits and '-' stay, every other
//     byte becomes '_' and two upper-case hex digits ("a.b" is "a_2Eb").
//     The value is JSON:
//
//     {"state":"online","node":"gw1","reason":"connect","epoch":"1f0c…","conn":17,"at":"2026-…Z"}
//
//     state is online or offline; reason is connect, timeout, closed,
//     shutdown or node_lost; node is where the device is (online) or was
//     last (offline; for node_lost the lost node); epoch and conn name the
//     connection: the node's lifetime and a counter within it. The record's
//     revision (the stream sequence) increases with every write to the key
//     and is the order consumers go by.
//
//   - "<prefix>-nodes" holds one lease per live node, keyed by the node id
//     ([A-Za-z0-9_-], 1–64 characters), value {"epoch":"1f0c…"}. Each key
//     has a TTL of the node's lease (whole seconds, at least 1 s) and is
//     refreshed every third of it by a publish carrying Nats-TTL and
//     Nats-Expected-Last-Subject-Sequence, so that a refresh never revives
//     a lease that expired or was taken over. One refresh is in flight at
//     a time, and its answer is awaited until the lease it extends would
//     end: under load the answer comes late, and a second refresh sent
//     meanwhile would only fail on the revision the first one moved. The
//     bucket keeps an expiry marker for an hour (LimitMarkerTTL).
//
// [Open] and [OpenStore] create the buckets when they are missing, with
// [Config].Replicas replicas; nodes that start together on a new cluster
// all bind to the one pair of buckets, within seconds (package
// [github.com/go-schedule/schedule/presence/ensure] retries the requests
// that a bucket still being created leaves unanswered).
//
// # Who writes what
//
// Every write to a device record compares and sets by revision:
//
//   - Online ([Node.Connect]): read the record, then Create or Update it at
//     the revision read; on a conflict read again and retry. The last
//     writer wins, so the newest connection is the one recorded. If the
//     record was online at another node, that node is told on the core
//     subject "<prefix>.kick.<node>" to close its connection; on the same
//     node the old connection is closed at once.
//   - Offline ([Conn.Offline]): Update at the revision of this connection's
//     own online write. Any later write (a newer connection anywhere, a
//     reaper) changed the revision, so the update fails and nothing is
//     recorded: a stale timer can never override a newer online.
//   - node_lost (reaping): a scan of all records, then, for each online
//     record of a node that holds no lease, Update at the revision scanned.
//     Several reapers at once each try the same revision; one wins, the
//     others fail and record nothing, so each device is recorded once.
//
// A write whose acknowledgement was lost is retried; a retry that finds
// the record already showing this connection's own write takes it as done.
//
// # Node leases, reaping and reconcile
//
// A node registers by creating its lease key with a fresh random epoch.
// Every live node watches the nodes bucket and lists it once per lease.
// The reaper is the live node with the smallest id: the expiry marker of a
// lease (a purge entry with reason MaxAge) is the fast path that starts
// its reap. Markers are not a guarantee (a watcher stalls for tens of
// seconds when its server dies; a marker disappears after LimitMarkerTTL),
// so the reaper also reaps when its listing misses a node that the last
// one had, and every [Config].ScanEvery in any case (four leases, at least
// a minute: the scan reads every record). A reap scans all records and
// records node_lost for every online record whose node holds no lease. It
// lists the leases before the scan too, and the scan keeps only the
// records of nodes missing from that listing: a node live before the scan
// and gone after it makes the reap scan again. A killed node's devices are
// thus recorded node_lost within one lease plus a scan by the fast path,
// two leases plus a scan by the listing. If the reaper itself dies, the
// next smallest id takes over at its next listing; two nodes that both
// believe they are the reaper (their listings differ for a moment) write
// the same compare-and-set, and one wins.
//
// A reap reads the records first and the leases after, so that a node
// that registered and recorded devices during the scan is seen live. The
// leases are listed by a watch, which may end before a lease refreshed
// while it ran; a node missing from a listing is therefore read once more
// by its key before it counts as gone, for a reap as for the listing each
// lease.
//
// A node restarted with the same id finds its predecessor's lease, takes it
// over with its own epoch (compare-and-set on the lease's revision) and,
// one lease later, records node_lost for each record still online at its
// id under an older epoch: the devices that did not come back meanwhile.
// Other nodes leave the records of a node that holds a lease alone.
//
// # A node cut off from the engine
//
// A node that has had no lease refresh acknowledged for a whole lease no
// longer knows whether it is live, so it holds every write (hellos wait)
// until it knows. If a refresh then succeeds, nothing was lost and the
// writes go on. If the refresh fails on the expected sequence, its lease
// expired or was taken over, and others may have recorded its devices
// node_lost: it closes all its connections and records nothing for them,
// and registers again under a new epoch, which takes two requests. It
// then holds its writes until it has reaped its own old epoch itself (the
// only reaper of a one-node fleet; a compare-and-set with any other
// reaper), so that no device's new online replaces the old one before it
// is recorded node_lost; one lease later it reaps once more, for an
// online write of the old epoch that landed after its own reap. Its
// devices reconnect as new connections.
//
// # Under load
//
// A node keeps at most 64 device writes (onlines, offlines; node_lost
// writes of a reap likewise) waiting on the engine at once; the rest wait
// in the node. A connect storm of tens of thousands of devices thus adds
// a few dozen requests to the node's connection, not tens of thousands.
// The lease goes over a second connection that Open dials with the
// caller's connection's options ([nats.Conn.Opts]) and [Node.Close] closes, so
// that a refresh's answer never waits behind what streams to the node on
// the first: a scan of every record delivers tens of thousands of
// messages to the reaper. The lease is refreshed only while the caller's
// connection is up, so that it never outlives the node's means to record
// its devices. A scan of every record, and a reap's writes, have no deadline
// of their own: they take as long as the number of records needs, and
// fail only when the engine sends nothing for a whole lease. A reap that
// fails keeps what it wrote; the next one skips those records.
//
// # Records of devices offline for months
//
// They stay: one record per device, history 1, about 150 bytes, the
// device's last known state, which is what an operator asks for.
// [Store.Prune] removes offline records older than a given time, by compare-and-set, so
// a device that came online meanwhile keeps its record.
//
// # What each guarantee costs the engine
//
//   - A heartbeat: nothing.
//   - An online: one read and one write (two round trips, at most 64
//     writes of a node in flight); a move adds one core message to the
//     old node.
//   - An offline: one write.
//   - A live node: one lease write per third of a lease, delivered to every
//     node's watch (n² deliveries for n nodes), and one listing of the
//     nodes bucket (n entries, through a short-lived consumer) per lease.
//   - The reconcile scan: every record once per [Config].ScanEvery, by the
//     reaper.
//   - A node lost: one scan by the reaper and one write per device.
//
// # Plugging it in
//
// The package depends on NATS only: it imports no go-schedule package
// (its examples and tests use the root module and heartbeat). The
// integrations are calls a gateway makes from what it has, so that this
// package builds neither mochi nor gnet:
//
//   - a heartbeat.Monitor keyed by *[Conn]: Beat on every packet, and an
//     expiry callback that calls [Conn.Offline] with [ReasonTimeout] and
//     closes the socket (the example of [Node.Connect], which uses only
//     heartbeat.New and Beat);
//   - a gnetidle Handler runs on the connection's event loop, which must
//     not wait for the engine: it starts go c.Offline(ctx, ReasonTimeout)
//     and returns gnet.Close;
//   - a mochi-mqtt broker adds the hook of package mqttpresence, a
//     package of its own for the same reason.
//
// [Node.Connect] and [Conn.Offline] wait for the engine (a round trip,
// longer while it is away); call them where waiting is allowed.
package presence
