import CLua
import CLuaShim
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The runtime's side of tracing: turning it on, the hooks the core calls, and writing. (What a
/// host reads of it: `Embedding/Tracing.swift`.)
///
/// Every hook is called by the core with the interpreter lock held, except `traceClock`, which
/// is read before taking it. With tracing off each hook is one test of `tracer`, a constant.
extension Runtime {
    // MARK: turning it on

    /// The tracer for a new runtime: `tracing` true or false as asked; nil asks the environment
    /// (`LUADISPATCH_TRACE=FILE`), which applies to the first interpreter of the process only
    /// (the one a script runs in, not the isolated ones it starts).
    static func makeTracer(_ tracing: Bool?, limit: Int?) -> Tracer? {
        let limit = limit ?? getenv("LUADISPATCH_TRACE_LIMIT").flatMap { Int(String(cString: $0)) } ?? 1_000_000
        if let tracing { return tracing ? Tracer(path: nil, limit: limit) : nil }
        guard let p = getenv("LUADISPATCH_TRACE"), p.pointee != 0 else { return nil }
        guard TraceAtExit.claim() else { return nil }
        return Tracer(path: String(cString: p), limit: limit)
    }

    /// Registers this runtime's trace to be written when the process exits. Called once.
    func traceAtExit() {
        guard tracer?.path != nil else { return }
        TraceAtExit.register(self)
    }

    // MARK: hooks

    /// Now, when tracing is on; 0 when off. Read before taking the lock for a block.
    @inline(__always) func traceClock() -> UInt64 { tracer == nil ? 0 : Tracer.clock() }

    /// Takes the lock for a block: 0 when not tracing; when tracing, the time it asked for the
    /// lock, or `Tracer.uncontended` when it was free (no clock read for a wait that did not
    /// happen).
    @inline(__always) func acquireForBlock() -> UInt64 {
        guard tracer != nil else {
            acquire()
            return 0
        }
        if ld_lock_try(lock) != 0 { return Tracer.uncontended }
        let requested = Tracer.clock()
        acquire()
        return requested
    }

    /// A block whose function is on top of `T` starts (`requested`: `traceClock()` before the lock).
    @inline(__always) func traceBegin(_ T: OpaquePointer?, _ requested: UInt64, _ label: @autoclosure () -> String?, _ kind: TraceKind, flow: UInt64 = 0,
                                       source: String? = nil) -> Tracer.Open? {
        guard requested != 0, let tracer else { return nil }
        return tracer.begin(T, requested: requested, label: label(), kind: kind, flow: flow, source: source)
    }

    /// `file:line` of a coroutine's function before it first runs (on top of its stack), else "?".
    func traceSourceName(_ co: OpaquePointer) -> String {
        var ar = lua_Debug()
        // Not started: status OK, no frame yet, the function on top.
        guard let tracer, lua_status(co) == LUA_OK, lua_getstack(co, 0, &ar) == 0, lua_gettop(co) >= 1,
              lua_type(co, -1) == LUA_TFUNCTION else { return "?" }
        return tracer.sourceName(co)
    }

    @inline(__always) func traceEnd(_ open: Tracer.Open?) {
        if let open { tracer?.end(open) }
    }

    /// A submission: the flow id the block it starts takes to `traceBegin`, 0 when off.
    @inline(__always) func traceFlow() -> UInt64 { tracer?.flowStart() ?? 0 }

    @inline(__always) func traceWait(_ call: String, _ kind: String, _ started: UInt64) {
        if started != 0 { tracer?.wait(call, kind: kind, started: started) }
    }

    @inline(__always) func traceInstant(_ what: String, _ subject: @autoclosure () -> String) {
        if let tracer { tracer.instant(what, subject()) }
    }

    /// An error the host reports itself (the CLI, for the main chunk's): an `error` instant.
    /// Lock held (from a chunk the host runs).
    package func traceReportedError(_ message: String) { traceInstant("error", message) }

    // MARK: writing at the end

    /// Writes the trace to its file if it has one and has not been written. Lock held.
    func writeTraceAtEnd() {
        guard let tracer, let path = tracer.path, !tracer.written else { return }
        tracer.written = true
        tracer.endRunning()
        if tracer.dropped > 0 {
            writeStderr("luadispatch: trace: \(tracer.dropped) events dropped (limit \(tracer.limit); set LUADISPATCH_TRACE_LIMIT)\n")
        }
        // After the time limit the run is over but for this: it writes what fits in a moment,
        // not seconds of a big trace (the limit promises an end, and the CLI's backstop waits).
        let deadline = lastTerminationKind == .timeLimit ? Tracer.clock() + Self.traceWritingAfterLimit : .max
        let (json, cut) = tracer.jsonBytes(until: deadline)
        if cut > 0 {
            writeStderr("luadispatch: trace: cut short after the time limit (\(cut) events left out)\n")
        }
        Self.write(json, to: path)
    }

    /// Nanoseconds a trace is written for at most after the time limit ended the run.
    static let traceWritingAfterLimit: UInt64 = 200_000_000

    @discardableResult
    static func write(_ json: String, to path: String) -> Bool { write(Array(json.utf8), to: path) }

    @discardableResult
    static func write(_ json: [UInt8], to path: String) -> Bool {
        guard let f = fopen(path, "w") else {
            writeStderr("luadispatch: cannot write trace '\(path)': \(String(cString: strerror(errno)))\n")
            return false
        }
        let ok = json.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, f) == $0.count }
        return fclose(f) == 0 && ok
    }
}

/// The environment's trace: one per process, written when its runtime closes or, failing that,
/// when the process exits (after an uncaught error in the main chunk, `os.exit`, ...).
enum TraceAtExit {
    private static let claimed = Atomic<Bool>(false)
    /// Unretained: the runtime unregisters when it closes.
    nonisolated(unsafe) private static var runtime: Unmanaged<Runtime>?
    private static let slot = Mutex<Void>(())

    static func claim() -> Bool {
        claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    static func register(_ rt: Runtime) {
        slot.withLock { _ in runtime = Unmanaged.passUnretained(rt) }
        atexit { TraceAtExit.flush() }
    }

    /// Called when the runtime closes (it has written the trace then).
    static func unregister(_ rt: Runtime) {
        slot.withLock { _ in if runtime?.takeUnretainedValue() === rt { runtime = nil } }
    }

    private static func flush() {
        guard let rt = slot.withLock({ _ in runtime })?.takeUnretainedValue() else { return }
        if ld_lock_held() == rt.lock {
            rt.writeTraceAtEnd()  // `os.exit` from Lua: this thread runs the interpreter
        } else if ld_lock_try_acquire(rt.lock, 2000) != 0 {
            rt.writeTraceAtEnd()
            rt.release()
        } else {
            writeStderr("luadispatch: trace not written: a block kept the interpreter busy at exit\n")
        }
    }
}
