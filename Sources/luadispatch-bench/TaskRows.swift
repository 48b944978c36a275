import Foundation

/// Tasks: waits that hold no thread, and what a step costs. The Lua sides are the scripts
/// `scripts/benchmarks/tasks_sleep.lua` and `task_step.lua`, run with `luadispatch run` in
/// processes of their own (so that thread counts are theirs).
enum TaskRows {
    static let rows: [Row] = [sleepers, awaitSignalled, suspendResume]

    /// Runs a benchmark script and returns its output line, with the process's figures.
    static func script(_ name: String, _ arguments: [String]) throws -> (line: String, seconds: Double, peakThreads: Int) {
        let path = try Locations.repositoryFile("scripts/benchmarks/\(name)")
        let out = NSTemporaryDirectory() + "luadispatch-bench-\(getpid())-\(name).out"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let r = try ProcessRows.measure([ProcessRows.cli, "run", path] + arguments, stdout: out)
        let line = (try String(contentsOfFile: out, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)
        return (line, r.seconds, r.peakThreads)
    }

    /// The numbers in `line`, in order.
    static func numbers(_ line: String) -> [Double] {
        line.split(whereSeparator: { !"0123456789.".contains($0) }).compactMap { Double($0) }
    }

    /// 10,000 sleeps of 1 s started at once: as tasks they all end about 1 s later on a few
    /// threads; as plain blocks each holds a thread, and Dispatch's pool grows slowly.
    static let sleepers = Row(
        name: "tasks_sleep", unit: "sleeps done within 1.5 s", baselineName: "plain blocks", better: .higher,
        target: "all within 1.5 s, <= 16 threads", meets: { _, _, _ in true }
    ) { scale in
        let n = max(200, Int(10_000 * scale))
        let tasks = try script("tasks_sleep.lua", ["tasks", "\(n)", "1.5"])
        let blocks = try script("tasks_sleep.lua", ["blocks", "\(n)", "1.5"])
        let t = numbers(tasks.line), b = numbers(blocks.line)
        guard t.count == 3, b.count == 3 else { throw BenchError("unexpected output: \(tasks.line) / \(blocks.line)") }
        return Measurement(
            lua: t[0], baseline: b[0],
            notes: String(format: "%d sleeps: tasks all done in %.3f s, peak %d threads; plain blocks %d done by %.1f s, peak %d threads",
                          n, t[2], tasks.peakThreads, Int(b[0]), b[2], blocks.peakThreads),
            meets: Int(t[0]) == n && t[2] <= 1.5 && tasks.peakThreads <= 16)
    }

    /// The definition of a task's step cost: a task waits a million times on a semaphore
    /// signalled just before (so the wait is over at once), against a plain block submitting its
    /// successor with q:async.
    static let awaitSignalled = Row(
        name: "task_await_signalled", unit: "ns/wait", baselineName: "q:async chain", better: .lower,
        target: "report", meets: { _, _, _ in true }
    ) { scale in try stepRow(scale, pick: 0) }

    /// A real suspension: `dispatch.sleep(0)` ends the step and a block on the task's queue
    /// resumes it, against the same q:async chain.
    static let suspendResume = Row(
        name: "task_suspend_resume", unit: "ns/step", baselineName: "q:async chain", better: .lower,
        target: "report", meets: { _, _, _ in true }
    ) { scale in try stepRow(scale, pick: 1) }

    private static func stepRow(_ scale: Double, pick: Int) throws -> Measurement {
        // Small in the smoke run: under ThreadSanitizer a million events per loop is too many.
        let n = scale >= 1 ? 1_000_000 : max(1_000, Int(100_000 * scale))
        let r = try script("task_step.lua", ["\(n)"])
        let x = numbers(r.line)
        guard x.count == 5 else { throw BenchError("unexpected output: \(r.line)") }
        return Measurement(lua: x[pick], baseline: x[2],
                           notes: String(format: "%d iterations; ping-pong between two queues %.0f ns", n, x[3]))
    }
}
