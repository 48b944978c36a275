// libdispatch on Linux: one DispatchIO stream channel that reads and writes a socket at once stalls
// (clients receive little or nothing of their echo; run: swiftc -O scripts/repro/socket-echo-stall.swift -o /tmp/stall && /tmp/stall 4 8388608).
// socket-echo-two-fds.swift is the same program with a dup of the socket for the writing side: it
// completes (docs/net.md, "The libdispatch stall", has the figures).
// Loopback echo with DispatchIO stream channels on sockets: C clients send SIZE bytes each, half-close,
// and read the echo back. Prints per-connection progress after 5 s if not done.
import Dispatch
import Glibc

let C = Int(CommandLine.arguments.dropFirst().first ?? "2")!
let SIZE = Int(CommandLine.arguments.dropFirst(2).first ?? "4194304")!
let q = DispatchQueue(label: "echo", attributes: .concurrent)

func listenSocket() -> (Int32, UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_in(); addr.sin_family = sa_family_t(AF_INET); addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    listen(fd, 128)
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &len) } }
    _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    return (fd, UInt16(bigEndian: addr.sin_port))
}
final class Box: @unchecked Sendable { var n = 0; var done = false }
let (lfd, port) = listenSocket()
let src = DispatchSource.makeReadSource(fileDescriptor: lfd, queue: q)
src.setEventHandler {
    while true {
        let c = accept(lfd, nil, nil); if c < 0 { break }
        _ = fcntl(c, F_SETFL, O_NONBLOCK)
        let ch = DispatchIO(type: .stream, fileDescriptor: c, queue: q) { _ in close(c) }
        ch.setLimit(lowWater: 1)
        ch.read(offset: 0, length: Int.max, queue: q) { done, data, err in
            if let data, !data.isEmpty { ch.write(offset: 0, data: data, queue: q) { _, _, _ in } }
            if done { ch.barrier { shutdown(c, Int32(SHUT_WR)) }; ch.close() }
        }
    }
}
src.resume()
let payload = DispatchData(bytes: UnsafeRawBufferPointer(UnsafeMutableRawBufferPointer.allocate(byteCount: SIZE, alignment: 1)))
let g = DispatchGroup()
var boxes: [Box] = []
for _ in 0..<C {
    let b = Box(); boxes.append(b)
    g.enter()
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_in(); addr.sin_family = sa_family_t(AF_INET); addr.sin_port = port.bigEndian
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    precondition(r == 0)
    _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    let ch = DispatchIO(type: .stream, fileDescriptor: fd, queue: q) { _ in close(fd) }
    ch.setLimit(lowWater: 1)
    ch.write(offset: 0, data: payload, queue: q) { done, _, _ in if done { shutdown(fd, Int32(SHUT_WR)) } }
    ch.read(offset: 0, length: Int.max, queue: q) { done, data, _ in
        if let data { q.async(flags: .barrier) { b.n += data.count } }
        if done { q.async(flags: .barrier) { b.done = true; g.leave() } ; ch.close() }
    }
}
let t0 = DispatchTime.now().uptimeNanoseconds
if g.wait(timeout: .now() + 5) == .timedOut {
    for (i, b) in boxes.enumerated() { print("conn \(i): got \(b.n) done \(b.done)") }
    exit(1)
}
let dt = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
print(Int(Double(C * SIZE * 2) / dt / 1e6), "MB/s")
