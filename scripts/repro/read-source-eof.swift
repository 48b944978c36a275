// libdispatch on Linux loses a read source's end of file: when a pipe's writer closes after the
// reader drained it, epoll reports EPOLLHUP without EPOLLIN, which libdispatch's event loop
// ignores (it only looks at EPOLLIN and EPOLLOUT), so the source never fires again.
// Plain Swift, no LuaDispatch. Build and run:
//   swiftc -O scripts/repro/read-source-eof.swift -o /tmp/read-source-eof && /tmp/read-source-eof [RUNS]
// Prints how many of RUNS write-then-close runs never saw end of file within 2 s.
import Dispatch
import Glibc

let runs = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1])! : 50
var lost = 0
for i in 0..<runs {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    let r = fds[0], w = fds[1]
    _ = fcntl(r, F_SETFL, fcntl(r, F_GETFL) | O_NONBLOCK)
    let q = DispatchQueue(label: "q")
    let done = DispatchSemaphore(value: 0)
    let src = DispatchSource.makeReadSource(fileDescriptor: r, queue: q)
    src.setEventHandler {
        var buf = [UInt8](repeating: 0, count: 4096)
        if read(r, &buf, 4096) == 0 { src.cancel() }
    }
    src.setCancelHandler { close(r); done.signal() }
    src.resume()
    _ = write(w, "hello ", 6)
    if i % 2 == 0 { usleep(1000) }
    _ = write(w, "world", 5)
    close(w)
    if done.wait(timeout: .now() + 2) == .timedOut {
        lost += 1
        src.cancel()
        done.wait()
    }
}
print("end of file lost in \(lost) of \(runs) runs")
