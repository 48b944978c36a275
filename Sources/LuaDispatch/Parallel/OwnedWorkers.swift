import CLuaShim
import Synchronization

/// The worker interpreters working for one runtime (pool workers running its jobs,
/// `concurrent_map` interpreters running its parts), so that its limits reach them: a time
/// limit or `interrupt()` ends their code as it ends the runtime's own, and a runtime with a
/// memory limit keeps `concurrent_map` interpreters of its own, which charge its budget (the
/// per-thread ones are shared by every runtime without a limit).
final class OwnedWorkers: Sendable {
    private struct State: ~Copyable {
        /// A few at a time (a pool's workers, a map's parts): an array, which a job enters and
        /// leaves for less than a dictionary's hashing costs.
        var working: [WorkerInterpreter] = []
        var spare: [WorkerInterpreter] = []
    }

    private let state = Mutex(State())

    /// Runs `body` on `worker` working for `owner`: ended with the owner's code while it runs.
    func run<T>(_ worker: WorkerInterpreter, for owner: Runtime, _ body: () -> T) -> T {
        state.withLock { s in
            s.working.append(worker)
            // An end that came first (its flag is set before it reaches the registry).
            if let kind = owner.terminationKind { worker.end(kind) }
        }
        defer {
            // Out of the registry first: no end reaches the worker after it has resumed.
            state.withLock { s in
                if let i = s.working.lastIndex(where: { $0 === worker }) {
                    s.working.swapAt(i, s.working.count - 1)
                    s.working.removeLast()
                }
            }
            worker.resume()
        }
        return body()
    }

    /// Ends the code of every worker working for the owner now (`Runtime.terminate`).
    func endAll(_ kind: LuaScriptError.Kind) {
        state.withLock { s in
            for worker in s.working { worker.end(kind) }
        }
    }

    /// A `concurrent_map` interpreter charging `owner`'s budget: a spare one, or a new one.
    func take(for owner: Runtime) -> WorkerInterpreter {
        if let worker = state.withLock({ $0.spare.popLast() }) { return worker }
        return WorkerInterpreter(libraries: owner.libraries, budget: owner.control.budget)
    }

    /// Gives back what `take` gave.
    func putBack(_ worker: WorkerInterpreter) {
        state.withLock { $0.spare.append(worker) }
    }

    /// Closes the spare interpreters (the owner is closing; none is working then).
    func closeSpares() {
        let spares = state.withLock { s in
            let all = s.spare
            s.spare = []
            return all
        }
        _ = spares  // released here, outside the lock: each closes its Lua state
    }
}
