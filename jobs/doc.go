// Package jobs runs durable delayed jobs on NATS JetStream: jobs that
// outlive their process, are found again by their key, and start at their
// due time, never before it, on whichever worker of a fleet is alive.
//
// Producers use a [Client] ([Client.Add], [Client.AddUnique],
// [Client.Cancel], [Client.Get], and [Client.NewLoader] for bulk adds)
// without running a worker. Workers ([Client.StartWorker]) run a
// [Handler] for each attempt on a [schedule.Scheduler] and its ants pool.
//
// # Buckets, keys and records
//
// A queue Q has two KV buckets:
//
//   - "jobs-Q" holds one record per job, history 1. Its key is the job's
//     partition (two hex digits, FNV-1a of the key modulo [Partitions]), a
//     dot, and the job key escaped by [presence.EncodeKey] ("a b" in
//     partition 0x12 is "12.a_20b"). The value is a JSON header line, then
//     the payload's bytes as given:
//
//     {"state":"pending","due":1795850796821,"attempt":1}
//     <payload>
//
//     state is pending, running or dead; due (Unix ms) is the due time of
//     the attempt due next or running; a running record also names the
//     worker ("node"), its lease epoch ("epoch"), when the attempt
//     started ("started") and a number unique to this start within the
//     epoch ("run"). A job done or cancelled has no record (a purge marker
//     that expires after ten minutes).
//
//   - "jobs-Q-nodes" holds one lease per live worker, keyed by its node
//     name, value {"epoch":"…"} or {"epoch":"…","draining":true}, with a
//     per-key TTL of the worker's lease, refreshed every third of it by a
//     publish that compares the revision.
//
// # Who runs what
//
// Each worker watches the leases. The non-draining live workers share the
// partitions by rendezvous hashing; each worker watches the records of its
// partitions (an ordered consumer per partition, replaced by the client
// when the engine's heartbeats to it stop) and keeps, per job, its KV key,
// revision and heap task, and no payload but for jobs due within ten
// seconds of their delivery, whose value it keeps until their fire. It
// arms one go-schedule task per pending job at its due time; nothing polls
// the engine. When a task fires, the worker reads the record (the payload)
// unless it kept it, checks it is the revision it armed, and writes it
// running by compare-and-set on that revision: the start. Only one
// contender's write can succeed, which fences a worker that lost the
// partition. The attempt's end is a second compare-and-set on the
// revision of the start: a purge (done), a pending record of the next
// attempt (fail) or a dead record. If the record moved meanwhile
// (replaced, cancelled, or taken over), the end records nothing and is
// reported [EventSuperseded].
//
// A record running under an epoch that holds no lease is an abandoned
// attempt: the partition's holder starts it again at once, with the same
// attempt number. An epoch counts as dead only when known dead: its
// worker's lease went away or was taken over under another epoch. An
// epoch the holder has not seen in any lease (its worker may have
// registered since the holder last saw the leases) is settled by reading
// that worker's lease from the stream's leader, so that neither a holder's
// stale view nor a replica behind it starts a live worker's attempt twice. A worker killed without warning thus loses its jobs to
// the live workers when its lease expires (the expiry marker, or the
// listing of leases each worker makes once a lease). [Worker.Stop] marks
// the lease draining first, so that the others take the partitions at
// once, and removes it when its running attempts have ended or its grace
// ran out.
package jobs
