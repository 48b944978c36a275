import XCTest
@testable import LuaDispatch

/// Objects handed to Lua: type checks read a tag in the userdata (not the metatable), and a
/// queue gets a metatable of its own the first time it is indexed (`ObjectType.objectFields`).
final class ObjectTests: XCTestCase {
    /// A file handle is a userdata of the same size as an object, and a group or a time is an
    /// object of another type: none passes for a queue, and each error names what it got.
    func testTypeChecksTellObjectsFromOtherUserdata() {
        let run = runLua("""
            local q = dispatch.queue("checked")
            for _, bad in ipairs({io.stdout, dispatch.group(), dispatch.now(), dispatch.semaphore(0)}) do
              t.record(select(2, pcall(q.async, bad, function() end)))
              t.record(select(2, pcall(q.sync, bad, function() end)))
            end
            t.record(select(2, pcall(dispatch.group().wait, q)))
            """)
        assertClean(run)
        XCTAssertEqual(run.strings, [
            "bad argument #1 to 'async' (dispatch.queue expected, got FILE*)",
            "bad argument #1 to 'sync' (dispatch.queue expected, got FILE*)",
            "bad argument #1 to 'async' (dispatch.queue expected, got dispatch.group)",
            "bad argument #1 to 'sync' (dispatch.queue expected, got dispatch.group)",
            "bad argument #1 to 'async' (dispatch.queue expected, got dispatch.time)",
            "bad argument #1 to 'sync' (dispatch.queue expected, got dispatch.time)",
            "bad argument #1 to 'async' (dispatch.queue expected, got dispatch.semaphore)",
            "bad argument #1 to 'sync' (dispatch.queue expected, got dispatch.semaphore)",
            "bad argument #1 to 'wait' (dispatch.group expected, got dispatch.queue)",
        ])
    }

    /// Fields read the same before the queue's first method call (which gives it its own
    /// metatable) and after; unknown keys are nil; the metatable stays locked; two userdata of
    /// one queue stay equal; fields cannot be assigned; `dispatch.global` gives one userdata per
    /// queue.
    func testQueueFieldsBeforeAndAfterItsOwnMetatable() {
        let run = runLua("""
            local function fields(q) return {q.label, q.concurrent, q.qos, q.nothing} end
            local q = dispatch.queue{label = "f", concurrent = true, qos = "utility"}
            local before = fields(q)
            q:sync(function() end)
            local after = fields(q)
            for i = 1, 4 do t.record(before[i], after[i]) end
            t.record(getmetatable(q), dispatch.global() == dispatch.global(), dispatch.global().label)
            t.record(pcall(function() q.label = "changed" end), q.label)
            t.record(type(q.async), q.async == dispatch.queue("other").async)
            t.record(rawequal(dispatch.global(), dispatch.global()), rawequal(dispatch.global("utility"), dispatch.global()),
                     dispatch.global("utility") == dispatch.global("utility"), dispatch.global("utility").qos)
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], [.string("f"), .string("f")])
        XCTAssertEqual(run.records[1], [.boolean(true), .boolean(true)])
        XCTAssertEqual(run.records[2], [.string("utility"), .string("utility")])
        XCTAssertEqual(run.records[3], [.nil, .nil])
        XCTAssertEqual(run.records[4], [.string("locked"), .boolean(true), .string("com.apple.root.default-qos")])
        XCTAssertEqual(run.records[5].first, .boolean(false))
        XCTAssertEqual(run.records[5].last, .string("f"))
        XCTAssertEqual(run.records[6], [.string("function"), .boolean(true)])
        // One userdata per global queue (which keeps its own metatable once indexed).
        XCTAssertEqual(run.records[7], [.boolean(true), .boolean(false), .boolean(true), .string("utility")])
    }
}
