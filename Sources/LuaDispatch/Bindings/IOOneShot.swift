import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// What a one-shot read has read so far, charged to the memory limit as it comes; past the
/// limit what it has is dropped, the read stops, and it ends with ENOMEM.
private final class ReadBuffer: @unchecked Sendable {
    var data = DispatchData.empty
    var charges: [HeldCharge] = []
    var dropped = false
}

/// `dispatch.io.read` and `dispatch.io.write`: one-shot operations on a descriptor.
extension IOBinding {
    static func installOneShot(_ t: inout ModuleSpec.Table) {
        t.function("read") { a throws(LuaError) in
            let fd = try FDBinding.descriptor(a, 1)
            let max = try length(a, 2)
            let q = try a.queueOrDefault(3)
            let fn = try a.functionRef(4)
            let rt = a.runtime
            rt.workAdded()
            let finish: @Sendable (DispatchData, Int32) -> Void = { data, error in
                rt.callHandler(fn.ref, on: q, kind: .io) { T in
                    DataBinding.push(T, rt, data)
                    lua_pushinteger(T, lua_Integer(error))
                    return 2
                }
                rt.workDone()
            }
            guard let shared = IODescriptors.acquire(fd) else {
                DispatchIO.read(fromFileDescriptor: fd, maxLength: max, runningHandlerOn: q.queue, handler: finish)
                return 0
            }
            if !shared.regular {
                IOStreamRead.start(shared, max: max, finish)
                return 0
            }
            oneShot(rt, shared, write: false) { channel, done in
                // One handler call with everything read, as dispatch_read makes. (The calls
                // of one operation run one after another, on its own serial queue.)
                let read = ReadBuffer()
                channel.io.read(offset: 0, length: max, queue: q.queue) { finished, data, error in
                    if let data, !data.isEmpty, !read.dropped {
                        if rt.pastMemoryLimit {
                            read.dropped = true
                            read.data = .empty
                            read.charges = []
                            // Reading on to drop the rest would take as long as the rest.
                            shared.stopOneShot(channel, write: false)
                        } else {
                            read.charges.append(HeldCharge(rt.charge(data.count)))
                            read.data.append(data)
                        }
                    }
                    guard finished else { return }
                    done()
                    finish(read.data, read.dropped && (error == 0 || error == ECANCELED) ? ENOMEM : error)
                }
            }
            return 0
        }
        t.function("write") { a throws(LuaError) in
            let fd = try FDBinding.descriptor(a, 1)
            let data = SendableData(try DataBinding.argument(a, 2))
            let q = try a.queueOrDefault(3)
            let fn = try a.functionRef(4)
            let rt = a.runtime
            rt.workAdded()
            let finish: @Sendable (DispatchData?, Int32) -> Void = { remaining, error in
                rt.callHandler(fn.ref, on: q, kind: .io) { T in
                    DataBinding.push(T, rt, remaining ?? .empty)
                    lua_pushinteger(T, lua_Integer(error))
                    return 2
                }
                rt.workDone()
            }
            guard let shared = IODescriptors.acquire(fd) else {
                DispatchIO.write(toFileDescriptor: fd, data: data.data, runningHandlerOn: q.queue, handler: finish)
                return 0
            }
            oneShot(rt, shared, write: true) { channel, done in
                channel.io.write(offset: 0, data: data.data, queue: q.queue) { finished, remaining, error in
                    guard finished else { return }
                    done()
                    finish(remaining, error)
                }
            }
            return 0
        }
    }

    /// A one-shot read or write on the runtime's channel for them (`IODescriptors`), in turn
    /// with the descriptor's other users: `start` submits it and calls `done` first thing in
    /// its last handler. (libdispatch's own `dispatch_read`/`dispatch_write` are not used on a
    /// shared descriptor: their handlers run only once every channel on it has closed.)
    private static func oneShot(_ rt: Runtime, _ shared: IODescriptors.Shared, write: Bool,
                                _ start: @escaping @Sendable (IODescriptors.OneShotChannel, _ done: @escaping @Sendable () -> Void) -> Void) {
        shared.submit(carrier: shared.oneShotCarrier, write: write) {
            shared.withOneShotChannel(rt, write: write) { channel in
                start(channel) {
                    shared.completed(write: write)
                    shared.oneShotDone(channel, write: write)
                    IODescriptors.release(shared)
                }
            }
        }
    }
}
