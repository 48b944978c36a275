import Dispatch
import Foundation

/// Replies not yet written on one connection: written at once, and kept only for what a
/// non-blocking send left (EAGAIN), until the socket is writable again. Shared by both designs.
struct NativeOutput {
    var bytes: [UInt8] = []
    var sent = 0
    var pending: Int { bytes.count - sent }

    enum State { case drained, blocked, failed }

    /// Writes what is pending on `fd`.
    mutating func flush(_ fd: Int32) -> State {
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .blocked : .failed
        }
        // Large buffers (a burst of big replies) are let go; small ones kept for the next replies.
        if bytes.capacity > 1 << 20 { bytes = [] } else { bytes.removeAll(keepingCapacity: true) }
        sent = 0
        return .drained
    }
}

/// Design (a): a Dispatch read source per connection (and on the listener), every handler on
/// one serial queue; a connection's write source is made at its first EAGAIN and runs only
/// while replies wait for the socket to take them.
enum NativeSourceServer {
    final class Connection {
        let fd: Int32
        let session: NativeSession
        let queue: DispatchQueue
        var reader: DispatchSourceRead!
        var writer: DispatchSourceWrite?
        var writerRunning = false
        var readerRunning = true
        var output = NativeOutput()
        var closing = false, closed = false
        /// Sources whose cancellation has not yet run: the descriptor closes after the last.
        var live = 1

        init(_ fd: Int32, _ session: NativeSession, _ queue: DispatchQueue) {
            self.fd = fd
            self.session = session
            self.queue = queue
        }

        func start() {
            reader = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            reader.setEventHandler { [unowned self] in readable() }
            reader.setCancelHandler { [self] in released() }
            reader.resume()
        }

        func readable() {
            guard !closed else { return }
            while true {
                let (n, err) = NativeBuffer.shared.read(fd) { closing = session.feed($0, into: &output.bytes) || closing }
                if n == 0 { closing = true; break }  // end of stream: the replies go out, then it closes
                if n < 0 && err != EAGAIN && err != EWOULDBLOCK && err != EINTR { return close() }
                if n < NativeServe.readSize || closing { break }
            }
            write()
        }

        /// Writes what is pending, or waits for the socket to take it; reading pauses while
        /// too much waits, or when the connection is to close once it has written.
        func write() {
            guard !closed else { return }
            switch output.flush(fd) {
            case .failed: return close()
            case .drained:
                if writerRunning { writer?.suspend(); writerRunning = false }
                if closing { return close() }
                if !readerRunning { reader.resume(); readerRunning = true }
            case .blocked:
                if writer == nil {
                    let w = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
                    w.setEventHandler { [unowned self] in write() }
                    w.setCancelHandler { [self] in released() }
                    live += 1
                    writer = w
                    w.resume()
                    writerRunning = true
                } else if !writerRunning {
                    writer?.resume()
                    writerRunning = true
                }
                if (closing || output.pending > NativeServe.pendingLimit) && readerRunning { reader.suspend(); readerRunning = false }
            }
        }

        func close() {
            guard !closed else { return }
            closed = true
            // A suspended source must run again to be cancelled (and released).
            if !readerRunning { reader.resume(); readerRunning = true }
            reader.cancel()
            if let w = writer {
                if !writerRunning { w.resume(); writerRunning = true }
                w.cancel()
            }
        }

        func released() {
            live -= 1
            guard live == 0 else { return }
            NativeSourceServer.open[fd] = nil
            Glibc.close(fd)
        }
    }

    /// The open connections, kept alive until they close (touched only on the server's queue).
    nonisolated(unsafe) static var open: [Int32: Connection] = [:]

    static func start(_ lfd: Int32, _ queue: DispatchQueue, _ make: @escaping () -> NativeSession) {
        let accepts = DispatchSource.makeReadSource(fileDescriptor: lfd, queue: queue)
        accepts.setEventHandler {
            while let c = NativeServe.accept(lfd) {
                let conn = Connection(c, make(), queue)
                open[c] = conn
                conn.start()
                // A client usually sends its request as it connects: read it now rather than
                // after the new source's first event.
                conn.readable()
            }
        }
        accepts.resume()
        keep = [accepts as AnyObject]
    }
    nonisolated(unsafe) static var keep: [AnyObject] = []
}

/// The one read buffer of a server's queue (64 KiB), lent to a session for each read.
final class NativeBuffer: @unchecked Sendable {
    static let shared = NativeBuffer()
    let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: NativeServe.readSize, alignment: 16)

    /// Reads once from `fd`: the count and errno; `body` sees the bytes read, if any.
    func read(_ fd: Int32, _ body: (UnsafeRawBufferPointer) -> Void) -> (Int, Int32) {
        let n = Glibc.read(fd, storage.baseAddress!, storage.count)
        if n < 0 { return (n, errno) }
        if n > 0 { body(UnsafeRawBufferPointer(rebasing: storage[0..<n])) }
        return (n, 0)
    }
}
