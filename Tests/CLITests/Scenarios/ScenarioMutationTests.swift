import Foundation
import XCTest

/// Each scenario's checks must catch the broken program the scenario exists to warn about. Each
/// test runs a copy of one bundled scenario with its synchronisation removed or weakened (a
/// barrier made plain, a `leave`, `enter`, `cancel`, `suspend` or semaphore `wait` removed, a
/// limit raised, ...) through `luadispatch scenarios run ID --check`, several times in a row,
/// and asserts that every run fails, for the expected reason, within the scenario's time limit.
/// An edit that no longer matches the script exactly once fails the test too: the mutant must
/// follow the script.
final class ScenarioMutationTests: XCTestCase {
    func testSyncMadeAsync3_1() throws {
        try assertFails("3.1", [("serialQueue:sync(function()", "serialQueue:async(function()")],
                        because: "FAILED: the sync task runs on the calling (main) thread")
    }

    func testQueueSuspendedBeforeTheAsyncCall3_6() throws {
        try assertFails("3.6", [("printCurrentThread(\"start test\")\nserialQueue:async(",
                                  "printCurrentThread(\"start test\")\nserialQueue:suspend()\nserialQueue:async(")],
                        because: "FAILED: work left that can never run: queue 'com.sinkingsoul.DispatchQueueTest.serialQueue' (suspended)")
    }

    func testBarrierMadePlain3_8() throws {
        try assertFails("3.8", [("end, { barrier = true })", "end, { barrier = false })")],
                        because: "FAILED: tasks 1-3 end before the barrier starts", "FAILED: tasks 4-6 start after the barrier ends")
    }

    func testTargetQueueRemoved4_1() throws {
        try assertFails("4.1", [("concurrent = true, target = targetQueue }\nlocal queue2", "concurrent = true }\nlocal queue2")],
                        because: "FAILED: two queues targeting one serial queue never overlap")
    }

    func testTargetNeverSuspended4_2() throws {
        try assertFails("4.2", [("targetQueue:suspend()\n", "")], because: "FAILED: it made 0 checks, and declares 2")
    }

    /// At full scale: the mutant fails at once either way, and at `--scale 0.05` it passed
    /// whenever the main thread was kept off the processor for the 0.1 s the delay then lasts.
    func testDelayRemoved5_0() throws {
        try assertFails("5.0", [("dispatch.main:after(t, block)", "dispatch.main:async(block)")],
                        because: "FAILED: the task fires after >= 2 s", arguments: ["--scale", "1"])
    }

    func testReplacementNotRecorded5_1() throws {
        try assertFails("5.1", [("        exchangingTask = anotherTask\n", "")], because: "FAILED: it made 0 checks, and declares 3")
    }

    func testSuspendRemoved6_1() throws {
        try assertFails("6.1", [("    queue:suspend()\n    print(\"The tasks are suspended\")\n    if onSuspended",
                                  "    print(\"The tasks are suspended\")\n    if onSuspended")],
                        because: "FAILED: it made 0 checks, and declares 5")
    }

    func testSecondSuspendSkipped6_2() throws {
        try assertFails("6.2", [("    queue:suspend()\n    print(\"The tasks are suspended\")",
                                  "    if SuspendAndResum.suspendCount == 1 then queue:suspend() end\n    print(\"The tasks are suspended\")")],
                        because: "FAILED: it made 0 checks, and declares 3")
    }

    func testALeaveRemoved7_2() throws {
        try assertFails("7.2", [("        completionHandler(data, status, err)\n        group:leave()   -- leave the group",
                                  "        completionHandler(data, status, err)")],
                        because: "FAILED: timed out after 5.20 s; still pending: 2 group enters not yet left", runs: 1)
    }

    func testAnEnterRemoved7_3() throws {
        try assertFails("7.3", [("    group:enter()\n    dispatch.http.get", "    dispatch.http.get")],
                        because: "FAILED: the notification comes after both downloads and both tasks end")
    }

    func testSemaphoreWaitsRemoved7_4() throws {
        try assertFails("7.4", [("semaphore:wait()\ngroup:enter()\nqueue2", "group:enter()\nqueue2"),
                                 ("semaphore:wait()\ngroup:enter()\nqueue3", "group:enter()\nqueue3")],
                        because: "FAILED: the numbers are printed strictly in order 0..30")
    }

    /// Parts of 32 MiB: reading one usually takes far longer than starting the other's channel,
    /// so the two parts' chunks interleave and the checksum differs. Once (beside CI's other
    /// runs) the first part's chunks all came before the second's: the output was right, and
    /// both parts were held at once, which the memory check caught.
    func testPartsReadAtOnce9_1() throws {
        try assertFails("9.1", [("    queueGroup:wait()   -- .distantFuture", "    -- queueGroup:wait()")],
                        because: "FAILED: the output equals the concatenation of the parts (checksum)",
                        "FAILED: peak resident memory during the copy stays below 3/4 of the data copied",
                        arguments: ["--size", "33554432"], runs: 2)
    }

    /// Chunks kept in Lua tables are Swift-side buffers that the Lua heap does not count; the
    /// process's peak resident memory does. At 2 x 32 MiB that is well above the bound.
    func testEveryChunkKept9_1() throws {
        try assertFails("9.1", [("local errors = {}\n", "local errors, kept = {}, {}\n"),
                                 ("        if data ~= nil then\n", "        if data ~= nil then\n            kept[#kept + 1] = data\n")],
                        because: "FAILED: peak resident memory during the copy stays below 3/4 of the data copied",
                        arguments: ["--size", "33554432"], runs: 1)
    }

    /// At 2 x 32 MiB a copy of the data is well above what the scenario allows.
    func testMappedDataCopied10_1() throws {
        try assertFails("10.1", [("dispatchData = dispatchData .. fileData",
                                   "dispatchData = dispatchData .. dispatch.data(fileData:bytes())")],
                        because: "FAILED: the memory the process allocated stays far below the size of the files",
                        arguments: ["--size", "33554432"], runs: 1)
    }

    func testLimitRaised11_1() throws {
        try assertFails("11.1", [("dispatch.semaphore(2)", "dispatch.semaphore(3)")],
                        because: "FAILED: task 3 is submitted only after one of tasks 1-2 has ended")
    }

    func testCancelRemoved12_1() throws {
        try assertFails("12.1", [("    workItem:cancel()\n", "")], because: "FAILED: the perform after cancel does nothing")
    }

    func testOnceMadePlainH_2() throws {
        try assertFails("H.2", [("local onceToken = dispatch.once(function()", "local onceToken = (function()")],
                        because: "FAILED: every caller gets the same shared instance")
    }

    func testSemaphoreWaitRemovedH_3() throws {
        try assertFails("H.3", [("    semaphore:wait()\n  end)\nend", "  end)\nend")],
                        because: "FAILED: jobs finish strictly in submission order")
    }

    func testSemaphoreWaitRemovedH_4() throws {
        try assertFails("H.4", [("    self.semaphore:wait()\n", "")],
                        because: "FAILED: measured peak concurrency is never above the limit")
    }

    func testGroupOptionRemovedH_5() throws {
        try assertFails("H.5", [("performExpensiveWork(item) end, { group = group })", "performExpensiveWork(item) end)")],
                        because: "FAILED: form 1: every task is done before notify runs")
    }

    func testBarrierMadePlainH_6() throws {
        try assertFails("H.6", [("    self.accessQueue:barrier_async(write)", "    self.accessQueue:async(write)")],
                        because: "FAILED: no lost writes with barrier writes")
    }

    func testSemaphoreWaitRemovedG_6() throws {
        try assertFails("G.6", [("    fd_sema:wait()\n", "")],
                        because: "FAILED: never more descriptors open at once than the limit")
    }

    func testOneSuspendRemovedG_7() throws {
        try assertFails("G.7", [("queue:suspend()                     -- count 2: needs two resumes\n", "")],
                        because: "FAILED: nothing runs while the queue is suspended")
    }

    func testOnceMadePlainB_3() throws {
        try assertFails("B.3", [("local initializationPredicate = dispatch.once(function()", "local initializationPredicate = (function()")],
                        because: "FAILED: the once block runs exactly once")
    }

    func testEnterRemovedB_6() throws {
        try assertFails("B.6", [("  group:enter()\n  queue:async(function()\n    work()", "  queue:async(function()\n    work()")],
                        because: "FAILED: enter/leave version: wait and notify after all 8 items")
    }

    func testCancelAtEndOfFileRemovedB_8() throws {
        try assertFails("B.8", [("        finished = true\n        stdinSource:cancel()\n        return\n      end\n    end",
                                  "        finished = true\n        return\n      end\n    end")],
                        because: "FAILED: timed out after 5.00 s; still pending:", runs: 1)
    }

    func testWriterNeverCancelsB_9() throws {
        try assertFails("B.9", [("      writer:cancel()\n", "")],
                        because: "FAILED: timed out after 5.80 s; still pending:", runs: 1)
    }

    func testClientsNeverHalfCloseN_1() throws {
        try assertFails("N.1", [("        if done then net.shutdown(fd, \"write\") end", "")],
                        because: "FAILED: timed out after 5.01 s; still pending:", runs: 1)
    }

    /// Switching turned off in the script (whatever LUADISPATCH_SWITCH_INTERVAL says): the
    /// computing block keeps the interpreter until it ends, and the main-queue timer freezes.
    func testSwitchingOffS_1() throws {
        try assertFails("S.1", [("local INTERVAL = 0.01\n", "local INTERVAL = 0.01\ndispatch.switch_interval(0)\n")],
                        because: "FAILED: the main-queue timer kept ticking while the block computed",
                        "FAILED: the longest gap between ticks stays below the length of the computation")
    }

    // MARK: the harness

    /// Runs the scenario `id` with `edits` applied `runs` times at `--scale 0.05` and asserts
    /// that every run failed with one of `reasons` in its output and ended within its time limit.
    private func assertFails(_ id: String, _ edits: [(String, String)], because reasons: String...,
                             arguments: [String] = [], runs: Int = 3,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let source = CLI.packageRoot.appendingPathComponent("scripts/scenarios")
        guard let name = try FileManager.default.contentsOfDirectory(atPath: source.path)
            .first(where: { $0.hasPrefix(id + "-") && $0.hasSuffix(".lua") }) else {
            return XCTFail("no scenario \(id)", file: file, line: line)
        }
        var text = try String(contentsOf: source.appendingPathComponent(name), encoding: .utf8)
        for (old, new) in edits {
            let count = text.components(separatedBy: old).count - 1
            guard count == 1 else {
                return XCTFail("scenario \(id): the mutation's text occurs \(count) times, not once: \(old)", file: file, line: line)
            }
            text = text.replacingOccurrences(of: old, with: new)
        }
        let dir = try ScenarioTests.scenarioDirectory([String(name.dropLast(4)): text])
        defer { try? FileManager.default.removeItem(at: dir) }
        let limit = try Self.timeLimit(text, arguments: arguments)
        let r = try CLI.run(["scenarios", "run"] + Array(repeating: id, count: runs)
                            + ["--check", "--scale", "0.05", "--dir", dir.path] + arguments,
                            timeout: Double(runs) * (limit + 10) + 30)
        let output = r.stdout
        XCTAssertEqual(r.status, 1, output, file: file, line: line)
        XCTAssertTrue(output.hasSuffix("0 passed, \(runs) failed\n"), "a mutant of \(id) passed:\n\(output)", file: file, line: line)
        // Each run's output, from "== ID title" to its verdict "-- ID FAILED (reason, 1.23 s)".
        let segments = output.components(separatedBy: "== \(id) ").dropFirst()
        XCTAssertEqual(segments.count, runs, output, file: file, line: line)
        for segment in segments {
            guard let verdict = segment.split(separator: "\n").last(where: { $0.hasPrefix("-- \(id) ") }) else {
                XCTFail("no verdict:\n\(segment)", file: file, line: line)
                continue
            }
            XCTAssertTrue(verdict.hasPrefix("-- \(id) FAILED ("), String(verdict), file: file, line: line)
            let seconds = Double(verdict.split(separator: " ").dropLast().last ?? "") ?? .infinity
            XCTAssertLessThan(seconds, limit + Self.startAndExit, "\(verdict): not within the limit of \(limit) s", file: file, line: line)
            XCTAssertTrue(reasons.contains { segment.contains($0) },
                          "the run must fail because \(reasons.joined(separator: " or ")):\n\(segment)", file: file, line: line)
        }
    }

    /// What the runner's time adds to the script's limit: starting and ending the process that
    /// runs it. An AddressSanitizer process beside CI's other runs took 1.44 s for both (N.1's
    /// mutant, timed out at 5.01 s, ended at 6.45 s; 5.07 s idle). Still under the runner's own
    /// kill at the limit + 5 s, which a mutant that hangs past its watchdog reaches.
    private static let startAndExit: Double = dlsym(dlopen(nil, RTLD_NOW), "__asan_init") != nil ? 3 : 1

    /// The runner's limit for a script at `--scale 0.05`: 4 x (delays x 0.05 + work + s per MiB
    /// x size in MiB) + 5 s, from the script's `-- expect:` line.
    private static func timeLimit(_ text: String, arguments: [String]) throws -> Double {
        let line = text.split(separator: "\n").first { $0.hasPrefix("-- expect: ") } ?? ""
        var delays = 0.0, work = 0.0, perMiB = 0.0
        for item in line.dropFirst("-- expect: ".count).split(separator: ",") {
            let words = item.split(separator: " ")
            let number = Double(words.first ?? "") ?? 0
            switch words.dropFirst().joined(separator: " ") {
            case "s of delays": delays = number
            case "s of work": work = number
            case "s per MiB": perMiB = number
            default: break
            }
        }
        let sizeIndex = arguments.firstIndex(of: "--size").map { $0 + 1 }
        let size = sizeIndex.flatMap { Double(arguments[$0]) } ?? Double(64 << 20)
        return 4 * (delays * 0.05 + work + perMiB * size / Double(1 << 20)) + 5
    }
}
