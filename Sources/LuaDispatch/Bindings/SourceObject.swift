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
    /// An event Dispatch delivered while the script had the source suspended (libdispatch can
    /// still deliver one that raced with `suspend`): handed to the handler on `resume`.
    private var heldEvent: Event?
    private var counted = false
    private var keepAlive: SourceObject?
    /// Its native cost against the memory limit, and a watched path's copy.
    private let charge: MemoryCharge

    init(_ rt: Runtime, kind: Kind, source: DispatchSourceProtocol, queue: QueueObject, handle: Handle,
         watcher: WatchedDescriptor? = nil) {
        runtime = rt
        if case .path(let path) = handle {
            charge = rt.charge(NativeCost.source + path.utf8.count)
        } else {
            charge = rt.charge(NativeCost.source)
        }
        self.kind = kind
        self.source = source
        self.queue = queue
        self.handle = handle
        self.watcher = watcher
        source.setEventHandler { [weak self] in self?.fired() }
        if let watcher {
            nonisolated(unsafe) let replace = source as! DispatchSourceUserDataReplace  // thread-safe in Dispatch
            let kind = kind, fd = watcher.fd
            watcher.attach(write: kind == .write) { SourceObject.ready(kind, fd, replace) }
        }
        source.setRegistrationHandler { [weak self] in
            guard let self else { return }
            rt.callHandler(on: queue, kind: .source) { T in self.push(T, self.registrationHandler) }
        }
        source.setCancelHandler { [weak self, watcher] in
            watcher?.close()
            self?.cancelFinished()
        }
        rt.ledger.sources.add(self)
    }

    /// Releasing a source that was never activated, or that is suspended, aborts: cancel it
    /// first (so it never fires), then balance. Its Lua handlers do not run any more.
    deinit {
        runtime.ledger.sources.remove(self)
        if !cancelled { source.cancel() }
        if !activated {
            source.activate()
        } else {
            for _ in 0..<suspensions { source.resume() }
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
            if suspensions == 0, let event = heldEvent {
                heldEvent = nil
                queue.queue.async { self.deliver(event) }
            }
        } else if suspensions == 0 {
            activated = true
            keepAlive = self
            source.activate()
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

    /// A watched descriptor is ready (DescriptorWatcher's queue): merges what the handler will
    /// see as `src.data`, plus 1 (a replace source does not fire for 0): bytes to read (0 at end
    /// of file or hang-up), pipe space to write, or 1.
    private static func ready(_ kind: Kind, _ fd: Int32, _ replace: DispatchSourceUserDataReplace) {
        var n = 1
        if kind == .read {
            let q = ld_fd_queued(fd)
            n = q >= 0 ? q : 1
        } else if kind == .write {
            n = max(1, ld_fd_space(fd))
        }
        replace.replace(data: UInt(n) + 1)
    }

    /// The event handler: takes Dispatch's data now (it is only valid inside the handler).
    private func fired() {
        var event = Event.count(0)
        switch kind {
        case .file:
            let names = (watcher as! FileWatcher).drain()
            if names.isEmpty {
                watcher?.rearm()
                return
            }
            event = .names(names)
        case .process:
            event = .names(ProcessWatcher.names)
        case .read, .write:
            event = .count(source.data &- 1)
        default:
            event = .count(source.data)
        }
        deliver(event)
    }

    /// Runs the handler for `event` (on the source's queue), unless the script suspended the
    /// source meanwhile: then `resume` delivers it.
    private func deliver(_ event: Event) {
        var held = false
        runtime.callHandler(on: queue, kind: .source) { T in
            if self.suspensions > 0 && !self.cancelled {
                self.heldEvent = event
                held = true
                return nil
            }
            self.event = event
            return self.push(T, self.handler)
        }
        // The next readiness, as Dispatch re-arms after each handler run; a process exits once.
        if !held && kind != .process { watcher?.rearm() }
    }

    private func cancelFinished() {
        runtime.callHandler(on: queue, kind: .source) { T in
            self.finished = true
            return self.push(T, self.cancelHandler)
        }
        runtime.acquire()
        finished = true  // also when no handler ran (the interpreter closed or ended its code)
        updateWork()
        releaseHandlers()
        keepAlive = nil  // the caller still holds `self` until the handler returns
        runtime.release()
    }

    /// Once the cancel handler ran the source never calls Lua again, so its handlers are let
    /// go: a handler that refers to its own source (`s:cancel()` inside it) would otherwise keep
    /// the source alive for ever through the registry, a cycle the collector cannot see.
    /// Handlers set later are dropped for the same reason. Lock held.
    func releaseHandlers() {
        handler = nil
        cancelHandler = nil
        registrationHandler = nil
    }

    /// Stores a handler set from Lua, unless the source has finished (see `releaseHandlers`).
    func setHandler(_ which: ReferenceWritableKeyPath<SourceObject, LuaRef?>, _ fn: LuaRef?) {
        if !finished { self[keyPath: which] = fn }
    }

    /// Pushes `fn` (no arguments) or tells `callHandler` there is nothing to call.
    private func push(_ T: OpaquePointer, _ fn: LuaRef?) -> Int32? {
        guard let fn else { return nil }
        lua_rawgeti(T, ld_registryindex(), lua_Integer(fn.ref))
        return 0
    }
}
