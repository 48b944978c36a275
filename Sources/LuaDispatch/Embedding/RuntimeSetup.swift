import CLuaShim

// Making a runtime and the one setting it takes after that. The stored public properties
// (`exitHandler`, `uncaughtErrorHandler`, `libraries`) are on the class, in Core/Runtime.swift.
extension Runtime {
    /// Creates an interpreter with `libraries` open and `dispatch` preloaded
    /// (`require("dispatch")`; without the package library, also the global `dispatch`).
    /// `ignoreEnvironment` is `lua -E`: the package library ignores LUA_PATH and LUA_CPATH.
    /// `tracing` turns the execution timeline on or off (see `traceJSON()`); nil leaves it to
    /// `LUADISPATCH_TRACE=FILE`. `traceLimit` bounds the events kept (default 1,000,000).
    /// `switchInterval` is how long a block may keep the interpreter while another waits for
    /// it, in seconds (0: until it waits; see `switchInterval`); nil leaves it to
    /// `LUADISPATCH_SWITCH_INTERVAL`, else 5 ms.
    /// `limits` bound what scripts may take (memory, time: see `Limits`).
    public convenience init(libraries: LuaLibraries = .all, ignoreEnvironment: Bool = false, tracing: Bool? = nil,
                            traceLimit: Int? = nil, switchInterval: Double? = nil, limits: Limits = .none) {
        self.init(libraries: libraries, ignoreEnvironment: ignoreEnvironment, tracing: tracing, traceLimit: traceLimit,
                  switchInterval: switchInterval, limits: limits, budget: limits.memory.map { ld_budget_new(Int64($0)) })
    }

    /// The interval when neither the host nor `LUADISPATCH_SWITCH_INTERVAL` sets one.
    public static let defaultSwitchInterval = 0.005

    /// The switch interval in seconds (0: cooperative, a block keeps the interpreter until it
    /// waits). Settable from any thread; `dispatch.switch_interval` is the script's view.
    public var switchInterval: Double {
        get { Double(ld_lock_interval(lock)) / 1e9 }
        set { ld_lock_set_interval(lock, Self.nanoseconds(newValue)) }
    }
}
