import CLuaShim

// The execution timeline as a host reads it (docs/tracing.md). Turning it on is `Runtime`'s
// `tracing:` argument; recording and writing are in Tracing/.
extension Runtime {
    /// Whether this interpreter records its execution timeline.
    public var isTracing: Bool { tracer != nil }

    /// The trace recorded so far, as Chrome trace event JSON (see docs/tracing.md); nil when
    /// tracing is off. Call it from outside Lua (not from a host function or a block).
    public func traceJSON() -> String? {
        guard let tracer, ld_lock_held() != lock else { return nil }
        acquire()
        defer { release() }
        return tracer.json()
    }

    /// Writes the trace recorded so far to `path`; false (with the reason on stderr) when it
    /// cannot, or when tracing is off.
    @discardableResult
    public func writeTrace(to path: String) -> Bool {
        guard let json = traceJSON() else { return false }
        return Self.write(json, to: path)
    }
}
