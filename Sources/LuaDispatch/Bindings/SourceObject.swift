import CLua
import CLuaShim
import Dispatch
import Glibc

/// A `DispatchSource` as Lua sees it, with the state libdispatch checks by aborting.
///
/// Dispatch's handlers are set once, at creation, to Swift closures that look up the current
/// Lua handlers under the lock: so setting handlers after activation or after cancel never
/// reaches libdispatch. The object counts its own suspensions (1 at creation: sources start
/// suspended) and activates the source on the resume that brings them to 0. From then until
/// its cancel handler ran it keeps itself alive; it counts as outstanding work while it is
/// active, not suspended and not yet finished cancelling. Mutable state is under the lock.
final class SourceObject: @unchecked Sendable {
    enum Kind: String {
        case timer, signal, read, write, data_add, data_or, data_replace, file, process
    }

    /// `src.data` of the latest event: Dispatch's number, or the event names that fired.
    enum Event {
        case count(UInt)
        case names([String])
    }

    /// `src.handle`: a number (fd, signal, pid) or the watched path.
    enum Handle {
        case number(Int)
        case path(String)
    }

    let runtime: Runtime
    let kind: Kind
    let source: DispatchSourceProtocol
    let queue: QueueObject
    let handle: Handle
    let watcher: WatchedDescriptor?

    var handler: LuaRef?
    var cancelHandler: LuaRef?
    var registrationHandler: LuaRef?
    var suspensions = 1
    var activated = false
    var cancelled = false
    /// The cancel handler ran: the source will never call Lua again.
    var finished = false
    var event = Event.count(0)
    /// A process source suspended by the runtime after "exit", so that the pidfd, readable for
    /// good, does not fire again; resumed by `cancel`.
    var exitSuspended = false
    /// A read source's hang-up seen while it could not run its handler: checked on resume.
    var pendingHangup = false
    private var counted = false
    private var keepAlive: SourceObject?

    init(_ rt: Runtime, kind: Kind, source: DispatchSourceProtocol, queue: QueueObject, handle: Handle,
         watcher: WatchedDescriptor? = nil) {
        runtime = rt
        self.kind = kind
        self.source = source
        self.queue = queue
        self.handle = handle
        self.watcher = watcher
        source.setEventHandler { [weak self] in self?.fired() }
        if kind == .read { watcher?.watchHangup { [weak self] in self?.hangupReported() } }
        source.setRegistrationHandler { [weak self] in
            guard let self else { return }
            rt.callHandler(on: queue) { T in self.push(T, self.registrationHandler) }
        }
        source.setCancelHandler { [weak self, watcher] in
            watcher?.close()
            self?.cancelFinished()
        }
        rt.sources.add(self)
    }

    /// Releasing a source that was never activated, or that is suspended, aborts: cancel it
    /// first (so it never fires), then balance. Its Lua handlers do not run any more.
    deinit {
        runtime.sources.remove(self)
        if !cancelled { source.cancel() }
        if !activated {
            source.activate()
        } else {
            for _ in 0..<suspensions { source.resume() }
            if exitSuspended { source.resume() }
        }
    }

    var description: String {
        let state = finished || cancelled ? "cancelled" : !activated || suspensions > 0 ? "suspended" : "active"
        return "dispatch.source (\(kind.rawValue), \(state))"
    }

    // MARK: called from Lua, lock held

    func resume() throws(LuaError) {
        guard suspensions > 0 else { throw .message("resume of source '\(kind.rawValue)', which is not suspended") }
        suspensions -= 1
        if activated {
            source.resume()
        } else if suspensions == 0 {
            activated = true
            keepAlive = self
            source.activate()
        }
        if suspensions == 0 && pendingHangup && !cancelled {
            pendingHangup = false
            scheduleEOF(after: 0)
        }
        updateWork()
    }

    func suspend() {
        suspensions += 1
        if activated { source.suspend() }
        updateWork()
    }

    /// The interpreter is closing: cancel, and resume a suspended source so that its cancel
    /// handler runs and lets it go (the handler no longer calls Lua).
    func cancelForClose() {
        cancel()
        guard activated else { return }
        while suspensions > 0 {
            suspensions -= 1
            source.resume()
        }
    }

    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        source.cancel()
        if exitSuspended {
            exitSuspended = false
            source.resume()
        }
        updateWork()
    }

    /// Counts the source as work exactly while it may still call Lua on its own. It also counts
    /// as a block queued on its queue, so that a source whose queue is suspended or inactive
    /// (which can never call Lua) is reported as held work at exit instead of keeping the CLI
    /// alive for ever.
    private func updateWork() {
        let active = activated && suspensions == 0 && !finished
        guard active != counted else { return }
        counted = active
        if active {
            queue.queued.wrappingAdd(1, ordering: .relaxed)
            runtime.workAdded()
        } else {
            queue.queued.wrappingSubtract(1, ordering: .relaxed)
            runtime.workDone()
        }
    }

    // MARK: called by Dispatch, without the lock

    /// The event handler: takes Dispatch's data now (it is only valid inside the handler).
    private func fired() {
        var event = Event.count(0)
        switch kind {
        case .file:
            let names = (watcher as! FileWatcher).drain()
            if names.isEmpty { return }
            event = .names(names)
        case .process:
            event = .names(ProcessWatcher.names)
        default:
            event = .count(source.data)
        }
        runtime.callHandler(on: queue) { T in
            self.event = event
            if self.kind == .process && !self.exitSuspended && !self.cancelled {
                self.exitSuspended = true
                self.source.suspend()
            }
            return self.push(T, self.handler)
        }
        if kind == .read { afterReadEvent() }
    }

    // MARK: end of file on read sources (Events/HangupWatcher.swift says why libdispatch loses it)

    /// The descriptor hung up with nothing left to read: libdispatch will not fire again.
    private var atLostEOF: Bool {
        guard let fd = watcher?.fd else { return false }
        let bits = ld_fd_probe(fd)
        return bits >= 0 && bits & 2 != 0 && bits & 4 == 0
    }

    /// The watcher's queue, without the lock.
    private func hangupReported() {
        runtime.acquire()
        defer { runtime.release() }
        guard !cancelled else { return }
        if activated && suspensions == 0 { scheduleEOF(after: 0) } else { pendingHangup = true }
    }

    /// Lock held.
    private func scheduleEOF(after delay: Double) {
        queue.queue.asyncAfter(deadline: .now() + delay) { self.deliverLostEOF() }
    }

    /// On the source's queue: calls the handler with `data == 0` while the end of file stands,
    /// as Dispatch reports it where the kernel tells it (again after each handler run, every
    /// 10 ms, until the source is cancelled or suspended).
    private func deliverLostEOF() {
        guard atLostEOF else {
            watcher?.rearmHangup { [weak self] in self?.hangupReported() }
            return
        }
        var delivered = false
        runtime.callHandler(on: queue) { T in
            guard !self.cancelled else { return nil }
            guard self.activated, self.suspensions == 0 else {
                self.pendingHangup = true
                return nil
            }
            self.event = .count(0)
            delivered = true
            return self.push(T, self.handler)
        }
        if delivered { afterReadEvent() }
    }

    /// After a read source's handler ran: an end of file libdispatch will not report is
    /// delivered by the runtime; otherwise the next hang-up is watched for.
    private func afterReadEvent() {
        guard atLostEOF else {
            watcher?.rearmHangup { [weak self] in self?.hangupReported() }
            return
        }
        runtime.acquire()
        defer { runtime.release() }
        guard !cancelled else { return }
        if activated && suspensions == 0 { scheduleEOF(after: 0.01) } else { pendingHangup = true }
    }

    private func cancelFinished() {
        runtime.callHandler(on: queue) { T in
            self.finished = true
            return self.push(T, self.cancelHandler)
        }
        runtime.acquire()
        updateWork()
        keepAlive = nil  // the caller still holds `self` until the handler returns
        runtime.release()
    }

    /// Pushes `fn` (no arguments) or tells `callHandler` there is nothing to call.
    private func push(_ T: OpaquePointer, _ fn: LuaRef?) -> Int32? {
        guard let fn else { return nil }
        lua_rawgeti(T, ld_registryindex(), lua_Integer(fn.ref))
        return 0
    }
}
