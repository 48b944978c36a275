import XCTest
@testable import LuaDispatch

/// State shared by blocks that may run at the same time: they interleave, so a read-modify-write
/// of a shared variable loses updates unless a serial queue, a barrier or a semaphore orders the
/// blocks (docs/execution-model.md, "Switching: blocks share the interpreter").
///
/// The update is `n = n + step()`, a call between reading `n` and writing it. A switch lands
/// where the interpreter looks at its hook again: after a call, at a loop's jump back, after an
/// operation that may call a metamethod (`#`, `..`, indexing a userdata). So the call makes the
/// window wide enough to be hit every run; `n = n + 1` alone loses updates too, but rarely (none
/// in nine runs of these racers at 1 ms, 20 µs and 2 µs).
final class SharedStateTests: XCTestCase {
    /// `race(add)`: two blocks of a concurrent queue, once both have started, call `add(k)` for
    /// 0.2 s each, counting their own calls in their own slots; returns the calls made in all.
    private static let prelude = """
        dispatch.switch_interval(0.001)
        local n = 0
        local function step() return 1 end
        local function race(add)
          local q, g = dispatch.queue{label = "racers", concurrent = true}, dispatch.group()
          local started, calls = {}, {}
          for k = 1, 2 do
            q:async(function()
              started[k] = true
              local deadline = dispatch.now() + 10
              while not started[3 - k] and dispatch.now() < deadline do end   -- both run from here
              local stop, mine = dispatch.now() + 0.2, 0
              repeat
                for _ = 1, 100 do add(k) end
                mine = mine + 100
              until dispatch.now() >= stop
              calls[k] = mine
            end, {group = g})
          end
          g:wait()
          return calls[1] + calls[2]
        end

        """

    /// Unserialized, the two blocks overwrite each other's updates: at least one is lost (in
    /// practice hundreds of thousands of the two or three million).
    func testUnserializedUpdatesFromConcurrentBlocksAreLost() {
        let run = runLua(Self.prelude + """
            local calls = race(function() n = n + step() end)
            t.record(calls, n)
            """, timeout: 30)
        assertClean(run)
        guard let r = run.records.first, r.count == 2, let calls = r[0].intValue, let n = r[1].intValue else {
            return XCTFail("no result: \(run.records)")
        }
        XCTAssertGreaterThan(n, 0)
        XCTAssertLessThan(n, calls, "no update lost: the blocks did not interleave")
    }

    /// The same updates through a serial queue, under a semaphore used as a lock, or each block
    /// in a slot of its own added up after the wait: none is lost. (Without the serial queue or
    /// the semaphore, this is the test above.)
    func testSerialQueueSemaphoreAndOwnSlotsLoseNoUpdate() {
        let run = runLua(Self.prelude + """
            local counter = dispatch.queue("counter")
            local calls = race(function() counter:sync(function() n = n + step() end) end)
            t.record("serial queue", calls, n)
            n = 0
            local lock = dispatch.semaphore(1)
            calls = race(function() lock:wait(); n = n + step(); lock:signal() end)
            t.record("semaphore", calls, n)
            local own = {0, 0}
            calls = race(function(k) own[k] = own[k] + step() end)
            t.record("own slots", calls, own[1] + own[2])
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records.count, 3, "\(run.records)")
        for r in run.records {
            XCTAssertEqual(r.count, 3, "\(r)")
            guard r.count == 3, let calls = r[1].intValue else { continue }
            XCTAssertGreaterThan(calls, 0, "\(r[0])")
            XCTAssertEqual(r[2].intValue, calls, "\(r[0]): updates lost")
        }
    }

    /// Barrier blocks run one at a time on their concurrent queue: while a block of another queue
    /// takes the interpreter from them again and again, they lose no update. Submitted without
    /// `barrier`, the same blocks run at the same time and lose hundreds of thousands.
    func testBarrierBlocksLoseNoUpdate() {
        let run = runLua(Self.prelude + """
            local q, g = dispatch.queue{label = "barriers", concurrent = true}, dispatch.group()
            local done, ready, progress = false, dispatch.semaphore(0), 0
            dispatch.queue("other"):async(function()     -- wants the interpreter all along
              ready:signal()
              while not done do progress = progress + 1 end
            end, {group = g})
            ready:wait()
            local barriers, calls, switched = dispatch.group(), {}, {}
            for k = 1, 2 do
              q:async(function()
                local before, stop, mine = progress, dispatch.now() + 0.2, 0
                repeat
                  for _ = 1, 100 do n = n + step() end
                  mine = mine + 100
                until dispatch.now() >= stop
                calls[k], switched[k] = mine, progress > before
              end, {group = barriers, barrier = true})
            end
            barriers:wait()
            done = true
            g:wait()
            t.record(calls[1] + calls[2], n, switched[1], switched[2])
            """, timeout: 30)
        assertClean(run)
        guard let r = run.records.first, r.count == 4, let calls = r[0].intValue else {
            return XCTFail("no result: \(run.records)")
        }
        XCTAssertGreaterThan(calls, 0)
        XCTAssertEqual(r[1].intValue, calls, "updates lost")
        XCTAssertEqual(r[2], .boolean(true), "the first barrier block was never switched out")
        XCTAssertEqual(r[3], .boolean(true), "the second barrier block was never switched out")
    }
}
