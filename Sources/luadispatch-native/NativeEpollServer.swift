import Dispatch
import Foundation

/// Design (b): one Dispatch read source on an epoll descriptor holding the listener and every
/// connection (level-triggered), its handler on one queue serving every ready socket of a
/// delivery; non-blocking sockets, replies written at once from the handler and waiting for
/// write readiness (EPOLLOUT) only after EAGAIN.
enum NativeEpollServer {
    // Glibc's module leaves out <sys/epoll.h>: the three calls are looked up by name.
    typealias Create = @convention(c) (Int32) -> Int32
    typealias Ctl = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    typealias Wait = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32
    static let epollCreate = unsafeBitCast(dlsym(nil, "epoll_create1"), to: Create.self)
    static let epollCtl = unsafeBitCast(dlsym(nil, "epoll_ctl"), to: Ctl.self)
    static let epollWait = unsafeBitCast(dlsym(nil, "epoll_wait"), to: Wait.self)
    static let IN: UInt32 = 0x001, OUT: UInt32 = 0x004, ERR: UInt32 = 0x008, HUP: UInt32 = 0x010
    static let add: Int32 = 1, mod: Int32 = 3
    // struct epoll_event is packed on x86_64 (events, then 8 bytes of data at offset 4).
    #if arch(x86_64)
    static let eventSize = 12, dataOffset = 4
    #else
    static let eventSize = 16, dataOffset = 8
    #endif
    static let batch = 256

    final class Connection {
        let fd: Int32
        let session: NativeSession
        var output = NativeOutput()
        var closing = false
        /// The events the set watches for it.
        var interest = IN
        init(_ fd: Int32, _ session: NativeSession) {
            self.fd = fd
            self.session = session
        }
    }

    final class Server {
        let ep: Int32
        let lfd: Int32
        let make: () -> NativeSession
        var connections: [Int32: Connection] = [:]
        let events = UnsafeMutableRawPointer.allocate(byteCount: batch * eventSize, alignment: 16)
        var source: DispatchSourceRead?

        init(_ lfd: Int32, _ make: @escaping () -> NativeSession) {
            self.lfd = lfd
            self.make = make
            ep = epollCreate(Int32(O_CLOEXEC))
            precondition(ep >= 0, "epoll_create1 failed")
            precondition(watch(lfd, add, IN) == 0)
        }

        func watch(_ fd: Int32, _ op: Int32, _ events: UInt32) -> Int32 {
            var ev = (UInt64(0), UInt64(0))
            return withUnsafeMutableBytes(of: &ev) { p in
                p.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
                p.storeBytes(of: UInt64(UInt32(bitPattern: fd)), toByteOffset: dataOffset, as: UInt64.self)
                return epollCtl(ep, op, fd, p.baseAddress)
            }
        }

        /// Serves every socket the set reports ready; a full batch is followed by another
        /// (a few at most, then the source fires again while the set stays readable).
        func ready() {
            for _ in 0..<4 {
                let n = Int(epollWait(ep, events, Int32(batch), 0))
                if n <= 0 { return }
                for i in 0..<n {
                    let e = events + i * eventSize
                    let flags = e.loadUnaligned(as: UInt32.self)
                    let fd = Int32(truncatingIfNeeded: (e + dataOffset).loadUnaligned(as: UInt64.self))
                    if fd == lfd {
                        acceptAll()
                        continue
                    }
                    guard let c = connections[fd] else { continue }
                    if flags & (IN | ERR | HUP) != 0 { read(c) }
                    if flags & OUT != 0, connections[fd] === c { write(c) }
                }
                if n < batch { return }
            }
        }

        func acceptAll() {
            while let c = NativeServe.accept(lfd) {
                let conn = Connection(c, make())
                connections[c] = conn
                if watch(c, add, IN) != 0 { close(conn); continue }
                // A client usually sends its request as it connects: read it now rather than
                // after another delivery.
                read(conn)
            }
        }

        /// One read (the set reports the socket again while more waits).
        func read(_ c: Connection) {
            let (n, err) = NativeBuffer.shared.read(c.fd) { c.closing = c.session.feed($0, into: &c.output.bytes) || c.closing }
            if n < 0 && err != EAGAIN && err != EWOULDBLOCK && err != EINTR { return close(c) }
            if n == 0 { c.closing = true }  // end of stream: the replies go out, then it closes
            write(c)
        }

        /// Writes what is pending; after EAGAIN the set also waits for the socket to be
        /// writable, and stops reading it while too much waits or it is to close.
        func write(_ c: Connection) {
            switch c.output.flush(c.fd) {
            case .failed: close(c)
            case .drained:
                if c.closing { return close(c) }
                interest(c, IN)
            case .blocked:
                interest(c, c.closing || c.output.pending > NativeServe.pendingLimit ? OUT : IN | OUT)
            }
        }

        func interest(_ c: Connection, _ events: UInt32) {
            guard c.interest != events else { return }
            c.interest = events
            if watch(c.fd, mod, events) != 0 { close(c) }
        }

        func close(_ c: Connection) {
            guard connections[c.fd] === c else { return }
            connections[c.fd] = nil  // closing the only descriptor takes it out of the set
            Glibc.close(c.fd)
        }
    }

    nonisolated(unsafe) static var server: Server?

    static func start(_ lfd: Int32, _ queue: DispatchQueue, _ make: @escaping () -> NativeSession) {
        let s = Server(lfd, make)
        let source = DispatchSource.makeReadSource(fileDescriptor: s.ep, queue: queue)
        source.setEventHandler { s.ready() }
        s.source = source
        server = s
        source.resume()
    }
}
