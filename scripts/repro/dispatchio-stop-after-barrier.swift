// libdispatch race (Swift 6.3.1, Linux): DispatchIO.close(flags: .stop) right after barrier() on a
// fresh pipe channel with a pending read is sometimes lost: no handler, barrier or cleanup ever
// runs. Measured: 11 of 160 runs (4 at a time) print HANG, with or without -sanitize=address.
//   swiftc -O scripts/repro/dispatchio-stop-after-barrier.swift -o /tmp/stop && for i in $(seq 40); do
//     for j in 1 2 3 4; do /tmp/stop & done; wait; done | sort | uniq -c

import Dispatch
import Glibc
var fds: [Int32] = [0, 0]
pipe(&fds)
let r = fds[0], w = fds[1]
let q = DispatchQueue(label: "stop")
let done = DispatchGroup()
done.enter(); done.enter(); done.enter()
let ch = DispatchIO(type: .stream, fileDescriptor: r, queue: q) { err in close(r); close(w); done.leave() }
ch.read(offset: 0, length: 100, queue: q) { d, data, err in if d { done.leave() } }
ch.barrier { done.leave() }
ch.close(flags: .stop)
if done.wait(timeout: .now() + 5) == .timedOut { print("HANG"); exit(3) }
