import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The runtime's duplicates of script descriptors for DispatchIO: one per open file, shared by
/// every `dispatch.io.read`, `dispatch.io.write` and `fd=` channel on it, and the order of the
/// operations on it.
///
/// Why a duplicate: libdispatch keys its descriptor entries by number, so a script that closes
/// its descriptor while an operation is in flight, or whose number is reused by a new
/// descriptor, must never reach an entry meant for the old one. Why one per open file:
/// libdispatch performs the operations of one channel in submission order, and a duplicate per
/// operation would lose that order.
///
/// Why a sequence of its own: libdispatch orders the operations of one channel, not those of two
/// channels on one descriptor (nor a channel's and `dispatch_write`'s; measured in
/// docs/io.md). So one-shot operations go through one channel of the runtime's per duplicate
/// (`oneShot`), and an operation submitted on another channel than the one whose operations
/// are in flight waits for them to complete. Reads and writes of a pipe, socket or terminal are
/// two directions, each in its own order (a read waiting for data never holds a write back);
/// a regular file has one order for both.
///
/// A stream socket gets a second duplicate for its write direction: libdispatch stalls a socket
/// read and written at once through one descriptor (docs/net.md), so reads go to `fd` and writes
/// to `writeFD`, each with libdispatch entries of its own.
///
/// A duplicate lives while operations or channels use it: it is closed after the completion or
/// cleanup handler of the last one, which libdispatch runs once it has let go of it. The table
/// is process-wide, as descriptor numbers are.
enum IODescriptors {
    private static let table = Mutex<[Int32: Shared]>([:])

    /// The shared duplicate of `scriptFD`, with one more user; nil if it cannot be duplicated
    /// (the caller then hands libdispatch `scriptFD` itself, which reports the error). Pair with
    /// `release`. A duplicate is reused only while it refers to the same open file as `scriptFD`:
    /// once the script has closed its descriptor and the number names another file, a new one
    /// is made (the old one stays with the operations still using it).
    static func acquire(_ scriptFD: Int32) -> Shared? {
        table.withLock { t in
            if let shared = t[scriptFD], ld_same_open_file(scriptFD, shared.fd) != 0 {
                shared.users += 1
                return shared
            }
            let own = ld_dup_cloexec(scriptFD)
            guard own >= 0 else { return nil }
            var st = stat()
            let regular = fstat(own, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
            var writeFD = own
            if !regular, ld_net_is_stream_socket(own) != 0 {
                ld_net_quiet_sigpipe()  // a write to a gone peer is then EPIPE, not the end of the process
                let second = ld_dup_cloexec(scriptFD)
                if second >= 0 { writeFD = second }
            }
            let shared = Shared(fd: own, writeFD: writeFD, scriptFD: scriptFD, regular: regular)
            t[scriptFD] = shared
            return shared
        }
    }

    /// One user less; the last one closes the duplicate.
    static func release(_ shared: Shared) {
        let last = table.withLock { t in
            shared.users -= 1
            guard shared.users == 0 else { return false }
            if t[shared.scriptFD] === shared { t[shared.scriptFD] = nil }
            return true
        }
        if last {
            close(shared.fd)
            if shared.split { close(shared.writeFD) }
        }
    }

    /// Duplicates in the table now (for tests).
    static var count: Int { table.withLock { $0.count } }

    final class Shared: @unchecked Sendable {
        /// The runtime's descriptor (for reads, when `split`).
        let fd: Int32
        /// The descriptor writes go to: a second duplicate for a stream socket, else `fd`.
        let writeFD: Int32
        let scriptFD: Int32
        /// Users (operations and channels); under the table's lock.
        fileprivate var users = 1
        /// One order (a regular file) or one per direction (read, write).
        private let lanes: Mutex<[Lane]>
        /// The runtime's channels for one-shot operations (one per direction when `split`),
        /// while they have some in flight.
        private let oneShot = Mutex<[OneShotChannel?]>([nil, nil])

        /// A regular file (one order for reads and writes), as opposed to a pipe, socket or
        /// terminal.
        let regular: Bool

        fileprivate init(fd: Int32, writeFD: Int32, scriptFD: Int32, regular: Bool) {
            self.fd = fd
            self.writeFD = writeFD
            self.scriptFD = scriptFD
            self.regular = regular
            lanes = Mutex(Array(repeating: Lane(), count: regular ? 1 : 2))
        }

        /// Runs `submit` (which hands one operation to libdispatch on the channel `carrier`)
        /// now, or once the operations in flight on other channels have completed. Whoever
        /// submits must call `completed(write:)` when the operation's last handler runs.
        func submit(carrier: ObjectIdentifier, write: Bool, _ submit: @escaping @Sendable () -> Void) {
            lanes.withLock { lanes in
                let i = min(write ? 1 : 0, lanes.count - 1)
                if lanes[i].held.isEmpty && (lanes[i].inFlight == 0 || lanes[i].carrier == carrier) {
                    lanes[i].carrier = carrier
                    lanes[i].inFlight += 1
                    submit()
                } else {
                    lanes[i].held.append(Held(carrier: carrier, counts: true, run: submit))
                }
            }
        }

        /// Runs `body` (a channel's `close` or `barrier`) once every operation submitted on
        /// `carrier` so far has been handed to libdispatch: at once, unless some are held.
        func afterHeld(carrier: ObjectIdentifier, _ body: @escaping @Sendable () -> Void) {
            lanes.withLock { lanes in
                let holding = lanes.indices.filter { i in lanes[i].held.contains { $0.carrier == carrier } }
                guard !holding.isEmpty else { return body() }
                let left = Mutex(holding.count)
                for i in holding {
                    lanes[i].held.append(Held(carrier: carrier, counts: false) {
                        if left.withLock({ $0 -= 1; return $0 }) == 0 { body() }
                    })
                }
            }
        }

        /// An operation of the lane is complete: once none is in flight, the held operations
        /// go, a channel at a time (all of one channel's, up to the first of another's).
        func completed(write: Bool) {
            lanes.withLock { lanes in
                let i = min(write ? 1 : 0, lanes.count - 1)
                lanes[i].inFlight -= 1
                while lanes[i].inFlight == 0, let next = lanes[i].held.first?.carrier {
                    lanes[i].carrier = next
                    while let op = lanes[i].held.first, op.carrier == next {
                        lanes[i].held.removeFirst()
                        if op.counts { lanes[i].inFlight += 1 }
                        op.run()
                    }
                }
            }
        }

        /// Whether reads and writes go to duplicates of their own (a stream socket).
        var split: Bool { writeFD != fd }

        /// Runs `body` with the channel one-shot operations (writes: `write`) go through (made
        /// on first use; it counts as `rt`'s outstanding work until its cleanup handler ran),
        /// counting one more operation on it. Pair with `oneShotDone`.
        func withOneShotChannel(_ rt: Runtime, write: Bool, _ body: (OneShotChannel) -> Void) {
            let i = split && write ? 1 : 0
            oneShot.withLock { slots in
                if slots[i] == nil {
                    table.withLock { _ in users += 1 }  // given back by the channel's cleanup
                    rt.workAdded()
                    slots[i] = OneShotChannel(DispatchIO(type: .stream, fileDescriptor: i == 1 ? writeFD : fd, queue: .global()) { [self] _ in
                        IODescriptors.release(self)
                        rt.workDone()
                    })
                }
                slots[i]!.operations += 1
                body(slots[i]!)
            }
        }

        /// A one-shot operation on `channel` ended; the last one of its direction closes the
        /// channel (a stopped one is closed already).
        func oneShotDone(_ channel: OneShotChannel, write: Bool) {
            let i = split && write ? 1 : 0
            let idle = oneShot.withLock { slots in
                channel.operations -= 1
                guard channel.operations == 0, slots[i] === channel else { return false }
                slots[i] = nil
                return true
            }
            if idle { channel.io.close() }
        }

        /// Stops `channel`: its operations in flight end at once (with ECANCELED), and later
        /// one-shot operations go through a new channel. For a read that has nothing left to
        /// gain: one past the memory limit would otherwise read to its end to drop what comes.
        func stopOneShot(_ channel: OneShotChannel, write: Bool) {
            let i = split && write ? 1 : 0
            oneShot.withLock { slots in
                if slots[i] === channel { slots[i] = nil }
            }
            channel.io.close(flags: .stop)
        }

        /// The identity one-shot operations are sequenced under.
        var oneShotCarrier: ObjectIdentifier { ObjectIdentifier(self) }
    }

    /// The runtime's channel for one-shot operations of one direction of a descriptor.
    final class OneShotChannel: @unchecked Sendable {
        let io: DispatchIO
        /// Operations in flight on it; under its `Shared`'s `oneShot` lock.
        fileprivate var operations = 0
        fileprivate init(_ io: DispatchIO) { self.io = io }
    }

    private struct Lane {
        var carrier: ObjectIdentifier?
        var inFlight = 0
        var held: [Held] = []
    }

    /// An operation waiting for its turn (`counts`), or a channel's close or barrier waiting
    /// for the operations submitted before it.
    private struct Held {
        let carrier: ObjectIdentifier
        let counts: Bool
        let run: @Sendable () -> Void
    }
}
