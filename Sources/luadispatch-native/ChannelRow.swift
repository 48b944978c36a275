import Dispatch
import Foundation

/// The baseline of workers.lua's `channel` mode: what a Swift programmer writes to pass values
/// from one thread to another, a buffer guarded by a serial `DispatchQueue` with a semaphore
/// counting what it holds.
enum ChannelRow {
    final class Buffer: @unchecked Sendable {
        private let guardQueue = DispatchQueue(label: "bench.channel.buffer")
        private var items: [Int] = []
        private var head = 0
        private let available = DispatchSemaphore(value: 0)

        func send(_ v: Int) {
            guardQueue.sync { items.append(v) }
            available.signal()
        }

        func receive() -> Int {
            available.wait()
            return guardQueue.sync {
                let v = items[head]
                head += 1
                if head == items.count {
                    items.removeAll(keepingCapacity: true)
                    head = 0
                }
                return v
            }
        }
    }

    /// One thread sends the integers 1...n, another receives them: messages per second.
    static func run(_ n: Int) -> Double {
        let buffer = Buffer()
        let done = DispatchGroup()
        final class Sum: @unchecked Sendable { var value = 0 }
        let sum = Sum()
        let t = NativeRows.seconds {
            // Two serial queues, as the Lua side's two workers: each gets a thread of its own
            // at once (the global queues add a thread only about once a second while one blocks).
            DispatchQueue(label: "bench.channel.producer").async(group: done) { for i in 1...n { buffer.send(i) } }
            DispatchQueue(label: "bench.channel.consumer").async(group: done) {
                var s = 0
                for _ in 1...n { s += buffer.receive() }
                sum.value = s
            }
            done.wait()
        }
        precondition(sum.value == n * (n + 1) / 2)
        return Double(n) / t
    }
}
