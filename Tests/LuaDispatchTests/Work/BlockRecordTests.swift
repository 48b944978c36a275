import CLuaShim
import Dispatch
import XCTest
@testable import LuaDispatch

/// `q:async(fn)` submits with `dispatch_async_f` and a record from a free list: the C objects
/// it needs are found, and records are reused rather than allocated per block.
final class BlockRecordTests: XCTestCase {
    func testEveryKindOfQueueHasItsDispatchObject() {
        let queues = [
            QueueObject(queue: DispatchQueue(label: "records.serial"), label: "records.serial", concurrent: false),
            QueueObject(queue: DispatchQueue(label: "records.concurrent", attributes: .concurrent), label: "records.concurrent", concurrent: true),
            QueueObject(main: DispatchQueue.main),
            QueueObject(queue: DispatchQueue.global(qos: .utility), label: "", concurrent: true, kind: .global),
        ]
        for q in queues {
            guard let raw = q.rawQueue else { return XCTFail("no dispatch_queue_t for \(q.queue.label)") }
            XCTAssertEqual(String(cString: ld_queue_label(raw)), q.queue.label)
        }
        XCTAssertNotNil(GroupObject(openEnters: OpenGroupEnters()).rawGroup)
    }

    func testRecordsAreReusedOnceTheirBlocksStart() {
        // Each round submits 2,000 blocks while holding the interpreter (none can start: the
        // script does not switch, whatever LUADISPATCH_SWITCH_INTERVAL says), then waits for
        // them: the second and third rounds must reuse the first round's records.
        let run = runLua("""
            dispatch.switch_interval(0)
            local q, n = dispatch.queue("records"), 0
            local g = dispatch.group()
            for round = 1, 3 do
              for i = 1, 1000 do q:async(function() n = n + 1 end) end
              for i = 1, 500 do q:async(function() n = n + 1 end, {group = g}) end
              for i = 1, 500 do q:async(function() n = n + 1 end, {barrier = true}) end
              q:sync(function() end)
              t.record(n)
            end
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [2000, 4000, 6000])
        run.runtime.acquire()
        let slabs = run.runtime.ledger.blockRecords.slabCount
        run.runtime.release()
        XCTAssertEqual(slabs, 4, "2,000 pending blocks need 4 slabs of 512 records, and later rounds reuse them")
    }

    func testRecordsAreSixteenBytesAndFindTheirRuntime() {
        // Every pending block holds a record: the runtime is found from the record's slab
        // rather than stored in it. Records of two runtimes must each lead to their own.
        XCTAssertEqual(MemoryLayout<BlockRecord>.stride, 16)
        let a = runLua("t.record(1)"), b = runLua("t.record(2)")
        for run in [a, b] {
            run.runtime.acquire()
            var taken: [UnsafeMutablePointer<BlockRecord>] = []
            for _ in 0..<600 { taken.append(run.runtime.ledger.blockRecords.take(for: run.runtime, run.runtime.L)!) }
            for r in taken {
                XCTAssertTrue(BlockRecords.owner(of: r).takeUnretainedValue() === run.runtime)
            }
            for r in taken { run.runtime.ledger.blockRecords.give(r) }
            run.runtime.release()
        }
    }
}
