import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Switching between blocks (docs/execution-model.md): a block that has kept the interpreter for
/// the switch interval while another thread waits for it gives it up at its next Lua instruction
/// and takes it back once the waiter has run. The waiter asks (lock.c), a signal hooks the Lua
/// code running on the holder's thread (switching.c), and the hook gives the interpreter up
/// (requests.c, which decides), then calls `switched`.
extension Runtime {
    /// Seconds as the lock's nanoseconds: negative and NaN mean 0, huge values are capped.
    static func nanoseconds(_ seconds: Double) -> Int64 {
        guard seconds > 0 else { return 0 }
        return seconds >= 1e9 ? Int64(1e18) : Int64(seconds * 1e9)
    }

    /// The interval a new runtime starts with: the host's, else the environment's, else the
    /// default. An unreadable environment value is reported once and ignored.
    static func initialSwitchInterval(_ requested: Double?) -> Double {
        if let requested { return requested }
        guard let raw = getenv("LUADISPATCH_SWITCH_INTERVAL") else { return defaultSwitchInterval }
        let text = String(cString: raw)
        guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
            Self.reportBadInterval(text)
            return defaultSwitchInterval
        }
        return seconds
    }

    private static let reportedBadInterval = Mutex(false)
    private static func reportBadInterval(_ text: String) {
        guard reportedBadInterval.withLock({ was in defer { was = true }; return !was }) else { return }
        writeStderr("luadispatch: LUADISPATCH_SWITCH_INTERVAL: a number of seconds >= 0 expected, got '\(text)' (using \(defaultSwitchInterval))\n")
    }

    /// Installs switching for this runtime: the bookkeeping after a switch, the interval, and the
    /// coroutine and debug functions that keep track of the running state (on `L`'s libraries).
    func setUpSwitching(interval: Double?, on L: OpaquePointer) {
        ld_switching_init(Runtime.switched)
        Runtime.setUpBlockingCalls()
        switchInterval = Runtime.initialSwitchInterval(interval)
        ld_switching_libs(L)
    }

    /// The switch hook's call once it has given the interpreter up and taken it back (from
    /// `started`, on `Tracer.clock()`'s clock). Runs on the holder's thread inside a hook of `L`,
    /// lock held; never raises.
    static let switched: ld_switched_fn = { L, started in
        let rt = Runtime.from(L!)
        rt.control.switches.wrappingAdd(1, ordering: .relaxed)
        rt.drainDeferred()
        rt.tracer?.switched(started: started, label: rt.currentQueue()?.label)
    }
}
