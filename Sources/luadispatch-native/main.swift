// The native Swift baselines of the benchmark suite, one standalone program built with -O
// (`swift build -c release`), linking nothing but Dispatch and Foundation: what a user would
// write instead of the Lua script. Each mode mirrors the Lua script the suite runs through the
// `luadispatch` CLI (scripts/benchmarks/core.lua, timer.lua, combine.lua, echo.lua) and prints its figure.
//   luadispatch-native async_serial N        blocks/s
//   luadispatch-native async_concurrent N    blocks/s
//   luadispatch-native sync_round_trip N     ns per call
//   luadispatch-native perform_overhead N    ns per iteration
//   luadispatch-native pending_block_memory N   resident pages grown, N (two numbers)
//   luadispatch-native timer DURATION        mean lateness in us of a 10 ms timer
//   luadispatch-native combine A B OUT       copies A then B into OUT with stream channels
//   luadispatch-native channel N             messages/s between two threads (workers.lua channel)
//   luadispatch-native echo CONNECTIONS BYTES [ROUNDS]   loopback echo MB/s and seconds (NativeEcho)
//   luadispatch-native serve redis|http source|epoll [PORT]   the request/response servers of
//       scripts/examples in Swift (NativeProtocol): prints the port, then serves until killed
import Dispatch
import Foundation
import Synchronization

let args = CommandLine.arguments
guard args.count >= 3 else {
    FileHandle.standardError.write(Data("usage: luadispatch-native MODE ARGS...\n".utf8))
    exit(2)
}
let count = Int(args[2]) ?? 0
switch args[1] {
case "async_serial": print(NativeRows.asyncSerial(count))
case "async_concurrent": print(NativeRows.asyncConcurrent(count))
case "sync_round_trip": print(NativeRows.syncRoundTrip(count))
case "perform_overhead": print(NativeRows.performOverhead(count))
case "pending_block_memory": print(NativeRows.pendingMemory(count))
case "timer": print(NativeRows.timer(duration: Double(args[2]) ?? 1))
case "channel": print(ChannelRow.run(count))
case "serve": NativeServe.main(Array(args.dropFirst(2)))
case "combine" where args.count == 5: NativeRows.combine(args[2], args[3], args[4])
case "echo" where args.count == 4 || args.count == 5:
    // ROUNDS > 1: the echo again and again in one process (descriptor numbers reused), the last
    // round's figure printed (NativeEchoTests).
    let rounds = args.count == 5 ? max(1, Int(args[4]) ?? 1) : 1
    var line = ""
    for _ in 0..<rounds { line = NativeEcho.echo(connections: count, size: Int(args[3]) ?? 0) }
    print(line)
default:
    FileHandle.standardError.write(Data("luadispatch-native: unknown mode \(args[1])\n".utf8))
    exit(2)
}
