import Dispatch
import Foundation
import Synchronization

/// The loopback echo of scripts/benchmarks/echo.lua as a Swift programmer would write it with
/// DispatchIO: a read source on the listening socket, and per connection one channel per
/// direction (a `dup` for writing: one stream channel reading and writing a socket at once
/// stalls in libdispatch on Linux, see docs/net.md). Clients on a concurrent queue each write
/// `size` bytes, half-close and read the echo to EOF. Prints "MB/s SECONDS", MB/s counting the
/// bytes in both directions.
enum NativeEcho {
    /// DispatchData is immutable: shared by every client.
    struct Payload: @unchecked Sendable {
        let data: DispatchData
        init(_ data: DispatchData) { self.data = data }
    }

    final class Tally: @unchecked Sendable {
        let lock = NSLock()
        var received = 0
    }

    static func listener() -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var addr = loopback(port: 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                precondition(bind(fd, sa, len) == 0 && listen(fd, 1024) == 0)
                precondition(getsockname(fd, sa, &len) == 0)
            }
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return (fd, UInt16(bigEndian: addr.sin_port))
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }

    /// A reading and a writing channel on `fd` (the writer on a duplicate); once both have let go
    /// of their descriptors, both are closed and `closed` runs.
    ///
    /// Both descriptors are closed together, after the second cleanup: closing each in its own
    /// channel's cleanup let a new socket take the first one's number while the old socket was
    /// still open through the other, and a channel on the new socket then read end of file at
    /// once (0 bytes echoed, the client's write `EPIPE`): 12 of 20 processes of 200 echo rounds
    /// failed so, 0 of 40 with this (docs/reliability.md, "Sockets").
    static func channels(_ fd: Int32, _ q: DispatchQueue, closed: @escaping @Sendable () -> Void = {}) -> (DispatchIO, DispatchIO) {
        let wfd = dup(fd)
        let left = Atomic<Int>(2)
        let done: @Sendable () -> Void = {
            guard left.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
            close(fd)
            close(wfd)
            closed()
        }
        let reader = DispatchIO(type: .stream, fileDescriptor: fd, queue: q) { _ in done() }
        let writer = DispatchIO(type: .stream, fileDescriptor: wfd, queue: q) { _ in done() }
        return (reader, writer)
    }

    static func echo(connections: Int, size: Int) -> String {
        let server = DispatchQueue(label: "echo.server", attributes: .concurrent)
        let (lfd, port) = listener()
        let accepts = DispatchSource.makeReadSource(fileDescriptor: lfd, queue: DispatchQueue(label: "echo.accept"))
        accepts.setEventHandler {
            while true {
                let c = accept(lfd, nil, nil)
                if c < 0 { return }
                _ = fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK)
                let (reader, writer) = channels(c, server)
                reader.read(offset: 0, length: Int.max, queue: server) { done, data, _ in
                    if let data, !data.isEmpty { writer.write(offset: 0, data: data, queue: server) { _, _, _ in } }
                    if done {
                        writer.barrier { shutdown(c, Int32(SHUT_WR)) }
                        reader.close()
                        writer.close()
                    }
                }
            }
        }
        accepts.resume()

        let bytes = [UInt8]((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) })
        let payload = Payload(bytes.withUnsafeBytes { DispatchData(bytes: $0) })
        let clients = DispatchQueue(label: "echo.clients", attributes: .concurrent)
        let group = DispatchGroup()
        let tally = Tally()
        let started = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<connections {
            group.enter()
            clients.async {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                var addr = loopback(port: port)
                let r = withUnsafePointer(to: &addr) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                precondition(r == 0, "connect failed")
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                let (reader, writer) = channels(fd, clients)
                writer.write(offset: 0, data: payload.data, queue: clients) { done, _, _ in
                    if done { shutdown(fd, Int32(SHUT_WR)); writer.close() }
                }
                let got = Atomic<Int>(0)
                reader.read(offset: 0, length: Int.max, queue: clients) { done, data, error in
                    got.wrappingAdd(data?.count ?? 0, ordering: .relaxed)
                    if done {
                        precondition(error == 0 && got.load(ordering: .relaxed) == size, "short echo")
                        reader.close()
                        tally.lock.withLock { tally.received += got.load(ordering: .relaxed) }
                        group.leave()
                    }
                }
            }
        }
        group.wait()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        accepts.cancel()
        precondition(tally.received == connections * size)
        return String(format: "%.1f %.4f", Double(connections * size * 2) / seconds / 1e6, seconds)
    }
}
