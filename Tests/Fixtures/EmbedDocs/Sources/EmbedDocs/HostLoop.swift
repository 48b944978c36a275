import Dispatch
import LuaDispatch

// A host that owns the main thread: a script runs on another thread, and its `dispatch.main`
// blocks, `main:sync` included, run when the host's loop services the main queue.
func hostLoop() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let result = try? runtime.run(string: """
            local dispatch = require("dispatch")
            return dispatch.main:sync(function() return "main thread: " .. tostring(dispatch.thread().is_main) end)
            """)
        print(result ?? [])        // ["main thread: true"]
        done.signal()
    }
    // The host's loop: service the main queue while scripts have work, else do its own.
    while done.wait(timeout: .now() + .milliseconds(1)) == .timedOut {
        if runtime.pendingWork > 0 {
            runtime.run(.once)     // runs what is ready, waiting for at least one main-queue block
        }
    }
    print(runtime.pendingWork)     // 0
}
