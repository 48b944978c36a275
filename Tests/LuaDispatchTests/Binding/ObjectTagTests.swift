import XCTest
@testable import LuaDispatch

/// Every metamethod and `__gc` of every object type checks its userdata's tag before touching
/// it, as luaL_checkudata does: called through `debug.getmetatable` with another value, it raises
/// or does nothing (a finalizer called with a value that is not its type's, as stock Lua's
/// file `__gc` does with a closed file), never ends the process.
final class ObjectTagTests: XCTestCase {
    /// One object of each type that has a metatable.
    private let makers = """
        local objects = {
          queue = dispatch.queue("q"), group = dispatch.group(), semaphore = dispatch.semaphore(1),
          work_item = dispatch.work_item(function() end), specific_key = dispatch.specific_key("k"),
          once = dispatch.once(function() end), time = dispatch.now(), walltime = dispatch.walltime(),
          source = dispatch.source.timer{handler = function() end}, data = dispatch.data("abc"),
          task = dispatch.task(function() end), pool = dispatch.workers{count = 1},
          channel = dispatch.channel(),
        }
        objects.job = objects.pool:submit(function() end)
        objects.job:wait()
        objects.task:wait()
        local names = {}
        for k in pairs(objects) do names[#names + 1] = k end
        table.sort(names)
        """

    /// `__gc` of each type given a time value, io.stdout and every other type's object: nothing
    /// happens to them (they still work afterwards), and the type's own object is released.
    func testGCOfEveryTypeLeavesOtherValuesAlone() {
        let run = runLua(makers + """
            local others = {io.stdout, dispatch.now(), dispatch.walltime(), 1, "x", {}}
            for _, k in ipairs(names) do others[#others + 1] = objects[k] end
            local called = 0
            for _, k in ipairs(names) do
              local gc = debug.getmetatable(objects[k]).__gc
              if gc then
                for _, v in ipairs(others) do
                  if v ~= objects[k] then
                    local ok, e = pcall(gc, v)
                    if not ok then t.record("error", k, tostring(e)) end
                    called = called + 1
                  end
                end
              end
            end
            t.record(called, io.stdout:write("") == io.stdout, tostring(objects.queue):match("^dispatch.queue") ~= nil,
                     objects.semaphore:wait(0), objects.data:bytes())
            """)
        assertClean(run)
        XCTAssertEqual(run.records.count, 1, "\(run.records)")
        XCTAssertGreaterThan(run.records.last?[0].intValue ?? 0, 200)
        XCTAssertEqual(Array(run.records.last?.dropFirst() ?? []), [true, true, true, "abc"])
    }

    /// A type's `__gc` called by a script on its own object does nothing (a binding waiting
    /// with the interpreter released may be using the object): the object still works, and the
    /// collector's own call releases it later.
    func testGCCalledDirectlyOnItsOwnObjectLeavesIt() {
        let run = runLua("""
            local q = dispatch.queue("kept")
            local gc = debug.getmetatable(q).__gc
            gc(q)
            setmetatable({}, {__index = gc})  -- named "index" when called through an event
            local ok = pcall(function() q:sync(function() gc(q) end) end)
            t.record(ok, q:sync(function() return "still" end))
            q = nil
            collectgarbage()
            """)
        assertClean(run)
        XCTAssertEqual(run.records.first, [true, "still"])
    }

    /// Every other metamethod of every type called with values that are not its type's.
    func testMetamethodsOfEveryTypeRefuseOtherValues() {
        let run = runLua(makers + """
            local values = {1, 2, "x", {}, io.stdout, nil}
            for _, k in ipairs(names) do values[#values + 1] = objects[k] end
            local errors = 0
            for _, k in ipairs(names) do
              for name, f in pairs(debug.getmetatable(objects[k])) do
                if type(f) == "function" and name ~= "__gc" then
                  for _, x in ipairs(values) do
                    for _, y in ipairs(values) do
                      if not pcall(f, x, y) then errors = errors + 1 end
                    end
                  end
                end
              end
            end
            t.record(errors)
            t.record(pcall(debug.getmetatable(dispatch.now()).__add, 1, 2))
            t.record(pcall(debug.getmetatable(dispatch.walltime()).__sub, 1, 2))
            """)
        assertClean(run)
        XCTAssertGreaterThan(run.records.first?[0].intValue ?? 0, 100)
        XCTAssertEqual(run.records[1], [false, "bad argument #2 to '__add' (dispatch.time expected, got number)"])
        XCTAssertEqual(run.records[2], [false, "bad argument #1 to '__sub' (dispatch.walltime expected, got number)"])
    }
}
