import CLuaShim

// Limits for scripts the host did not write (docs/embedding.md, "Untrusted scripts"), and
// ending a script from outside. How an end reaches all Lua code: Control/Termination.swift.
extension Runtime {
    /// What a host limits. `memory`: bytes every Lua state of the interpreter may hold together
    /// (worker interpreters too); an allocation past it fails with Lua's "not enough memory".
    /// `time`: seconds of wall time each `run` or `call` (and the work it leaves running) may
    /// take before the interpreter ends it.
    public struct Limits: Sendable, Equatable {
        public var memory: Int?
        public var time: Double?

        public init(memory: Int? = nil, time: Double? = nil) {
            self.memory = memory
            self.time = time
        }

        public static let none = Limits()
    }

    /// Ends every Lua code of this interpreter from any thread, as a time limit does: the code
    /// running raises "interrupted" (which `pcall` cannot catch), waits end, pending blocks and
    /// timers are dropped. The `run` or `call` in progress throws an error of kind
    /// `.interrupted`. Once its work has drained, the interpreter runs the next script normally.
    public func interrupt() { terminate(.interrupted) }

    /// The kind of the last end (`nil` if none yet); kept after the interpreter is usable again,
    /// for a host that reports it (the CLI's exit).
    public var lastTerminationKind: LuaScriptError.Kind? {
        let k = LuaScriptError.Kind(rawValue: control.lastTermination.load(ordering: .acquiring))
        return k == .error ? nil : k
    }

    /// Bytes the interpreter's Lua states and data hold against the memory limit (0 without one).
    public var memoryInUse: Int { control.budget.map { Int(ld_budget_used($0)) } ?? 0 }

    /// Ends the interpreter's code with a time-limit error `seconds` from now, unless disarmed
    /// first (by another `armDeadline`, or once the interpreter is idle after the run or call).
    public func armDeadline(_ seconds: Double) { scheduleDeadline(seconds) }

    /// Cancels the armed deadline, if any.
    public func disarmDeadline() { control.deadlineToken.wrappingAdd(1, ordering: .acquiringAndReleasing) }
}
