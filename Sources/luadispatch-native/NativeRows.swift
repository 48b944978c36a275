import Dispatch
import Foundation
import Synchronization

/// Each function is the Swift program a user would write instead of the matching Lua script.
enum NativeRows {
    final class Counter: @unchecked Sendable { var n = 0 }

    static func seconds(_ body: () -> Void) -> Double {
        let t0 = DispatchTime.now().uptimeNanoseconds
        body()
        return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
    }

    /// n closures onto a serial queue, then one sync: blocks per second.
    static func asyncSerial(_ n: Int) -> Double {
        let q = DispatchQueue(label: "bench.serial")
        let c = Counter()
        let t = seconds {
            for _ in 0..<n { q.async { c.n += 1 } }
            q.sync {}
        }
        precondition(c.n == n)
        return Double(n) / t
    }

    /// The same onto a concurrent queue (an atomic counter), then a barrier sync.
    static func asyncConcurrent(_ n: Int) -> Double {
        let q = DispatchQueue(label: "bench.concurrent", attributes: .concurrent)
        let c = Atomic<Int>(0)
        let t = seconds {
            for _ in 0..<n { q.async { c.wrappingAdd(1, ordering: .relaxed) } }
            q.sync(flags: .barrier) {}
        }
        precondition(c.load(ordering: .relaxed) == n)
        return Double(n) / t
    }

    /// An uncontended sync of a trivial block on a serial queue: ns per call.
    static func syncRoundTrip(_ n: Int) -> Double {
        let q = DispatchQueue(label: "bench.sync")
        let c = Counter()
        let t = seconds { for _ in 0..<n { q.sync { c.n += 1 } } }
        precondition(c.n == n)
        return t / Double(n) * 1e9
    }

    /// concurrentPerform with a trivial body: ns per iteration.
    static func performOverhead(_ n: Int) -> Double {
        let sum = Atomic<Int>(0)
        let t = seconds { DispatchQueue.concurrentPerform(iterations: n) { sum.wrappingAdd($0 + 1, ordering: .relaxed) } }
        precondition(sum.load(ordering: .relaxed) == n * (n + 1) / 2)
        return t / Double(n) * 1e9
    }

    /// Resident pages grown by n blocks pending on a suspended queue, and n ("PAGES N").
    static func pendingMemory(_ n: Int) -> String {
        let q = DispatchQueue(label: "bench.pending")
        let c = Counter()
        q.suspend()
        let before = residentPages()
        for _ in 0..<n { q.async { c.n += 1 } }
        let grown = residentPages() - before
        q.resume()
        q.sync {}
        precondition(c.n == n)
        return "\(grown) \(n)"
    }

    static func residentPages() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = s.split(separator: " ").compactMap { Int($0) }
        return pages.count > 1 ? pages[1] : 0
    }

    /// Mean lateness (us) of a 10 ms repeating timer over `duration` seconds, against
    /// start + n * interval (as scripts/benchmarks/timer.lua).
    static func timer(duration: Double) -> Double {
        let interval = 0.01
        let fires = Int((duration / interval).rounded())
        let q = DispatchQueue(label: "timer")
        let timer = DispatchSource.makeTimerSource(queue: q)
        let start = DispatchTime.now() + interval
        let done = DispatchSemaphore(value: 0)
        final class State: @unchecked Sendable { var n = 0, sum = 0.0 }
        let s = State()
        timer.schedule(deadline: start, repeating: interval, leeway: .nanoseconds(0))
        timer.setEventHandler {
            s.n += Int(timer.data)
            let ideal = start.uptimeNanoseconds + UInt64(Double(s.n - 1) * interval * 1e9)
            s.sum += Double(Int64(DispatchTime.now().uptimeNanoseconds) - Int64(ideal)) / 1e3
            if s.n >= fires {
                timer.cancel()
                done.signal()
            }
        }
        timer.resume()
        done.wait()
        return s.sum / Double(s.n)
    }

    /// scripts/benchmarks/combine.lua in Swift: A then B into OUT, stream channels with
    /// highWater 1 MiB, each chunk written as it is read.
    static func combine(_ a: String, _ b: String, _ out: String) -> Never {
        // DispatchIO takes absolute paths only (the Lua binding resolves relative ones too).
        let cwd = FileManager.default.currentDirectoryPath
        func absolute(_ p: String) -> String { p.hasPrefix("/") ? p : cwd + "/" + p }
        let (a, b, out) = (absolute(a), absolute(b), absolute(out))
        let q = DispatchQueue(label: "combine")
        let done = DispatchSemaphore(value: 0)
        let output = DispatchIO(type: .stream, path: out, oflag: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644, queue: q) { _ in
            done.signal()
        }!
        @Sendable func copy(_ path: String, then next: @escaping @Sendable () -> Void) {
            let input = DispatchIO(type: .stream, path: path, oflag: O_RDONLY, mode: 0, queue: q) { _ in }!
            input.setLimit(highWater: 1 << 20)
            input.read(offset: 0, length: Int.max, queue: q) { finished, data, _ in
                if let data, !data.isEmpty { output.write(offset: 0, data: data, queue: q) { _, _, _ in } }
                if finished {
                    input.close()
                    next()
                }
            }
        }
        copy(a) { copy(b) { output.close() } }
        done.wait()
        exit(0)
    }
}
