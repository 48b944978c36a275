import Foundation
import XCTest
@testable import LuaDispatch

/// `LuaLibraries.sandbox` (and `.restricted`): exactly the library set of API.md's sandbox row,
/// in the main interpreter and in worker interpreters. What needs a module or a C library on the
/// search paths (read from the environment when the interpreter is made) is in SandboxCLITests.
final class SandboxTests: XCTestCase {
    /// Names that must be nil in a sandbox, each checked on its own.
    static let absent = [
        "io", "debug", "dofile", "loadfile",
        "os.execute", "os.exit", "os.getenv", "os.remove", "os.rename", "os.tmpname", "os.setlocale",
        "package.loadlib", "package.cpath", "package.searchpath",
        "require('dispatch').fd", "require('dispatch').io", "require('dispatch').http", "require('dispatch').net",
        "require('dispatch').kill", "require('dispatch').exit", "require('dispatch').data.map",
        "require('dispatch').source.read", "require('dispatch').source.write", "require('dispatch').source.file",
        "require('dispatch').source.process", "require('dispatch').source.signal",
    ]
    /// Names that stay.
    static let present = [
        "load", "print", "collectgarbage", "string.dump", "require", "setmetatable", "coroutine.wrap",
        "table.concat", "string.format", "math.floor", "utf8.char",
        "os.time", "os.clock", "os.date", "os.difftime", "package.preload", "package.loaded", "package.path",
        "require('dispatch').queue", "require('dispatch').main", "require('dispatch').source.timer",
        "require('dispatch').source.data_add", "require('dispatch').data", "require('dispatch').task",
        "require('dispatch').concurrent_map", "require('dispatch').workers", "require('dispatch').channel",
    ]

    private func value(_ rt: Runtime, _ expression: String) throws -> LuaValue {
        let r = try rt.run(string: "return type(\(expression))")
        return r.first ?? .nil
    }

    func testAbsentNamesAreNilAndTheRestIsThere() throws {
        let rt = TestRuntimes.make(libraries: .sandbox)
        for name in Self.absent {
            XCTAssertEqual(try value(rt, name), "nil", name)
        }
        for name in Self.present {
            XCTAssertNotEqual(try value(rt, name), "nil", name)
        }
        // The same names in an interpreter with every library: the list checks something.
        let all = TestRuntimes.make(libraries: .all)
        for name in Self.absent {
            XCTAssertNotEqual(try value(all, name), "nil", name)
        }
    }

    func testOsKeepsOnlyTheClockAndTheCalendar() throws {
        let rt = TestRuntimes.make(libraries: .sandbox)
        let keys = try rt.run(string: "local k = {} for n in pairs(os) do k[#k + 1] = n end table.sort(k) return table.concat(k, ' ')")
        XCTAssertEqual(keys.first, "clock date difftime time")
        let same = try rt.run(string: "return package.loaded.os == os, type(os.date('*t').year), os.difftime(2, 1)")
        XCTAssertEqual(same, [true, "number", 1.0])
    }

    /// Every name of `dispatch` is either kept in the sandbox or removed with a reason: a
    /// binding added later fails here until someone decides which.
    func testEveryDispatchNameIsClassified() throws {
        let all = TestRuntimes.make(libraries: .all)
        let sandbox = TestRuntimes.make(libraries: .sandbox)
        let names = """
            local d, out = require('dispatch'), {}
            for k, v in pairs(d) do
              out[#out + 1] = k
              if type(v) == 'table' then for k2 in pairs(v) do out[#out + 1] = k .. '.' .. k2 end end
            end
            table.sort(out)
            return table.concat(out, ' ')
            """
        func list(_ rt: Runtime) throws -> [String] {
            try rt.run(string: names).first?.stringValue?.split(separator: " ").map(String.init) ?? []
        }
        let everything = try list(all), kept = try list(sandbox)
        func isKept(_ name: String) -> Bool {
            let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
            guard let entry = SandboxedModule.kept[parts[0]] else { return false }
            guard parts.count == 2, let names = entry else { return true }
            return names.contains(parts[1])
        }
        for name in everything {
            let removed = SandboxedModule.removed[name] != nil || SandboxedModule.removed[String(name.split(separator: ".")[0])] != nil
            XCTAssertTrue(isKept(name) != removed, "dispatch.\(name): kept \(isKept(name)), removed \(removed)")
        }
        XCTAssertEqual(kept, everything.filter(isKept))
        XCTAssertFalse(kept.isEmpty)
    }

    func testLoadTakesTextOnlyWhateverTheMode() throws {
        let rt = TestRuntimes.make(libraries: .sandbox)
        let binaryError = "attempt to load a binary chunk (mode is 't')"
        for mode in ["nil", "'b'", "'bt'", "'t'"] {
            let r = try rt.run(string: "return load(string.dump(function() return 1 end), 'x', \(mode))")
            XCTAssertEqual(r, [.nil, .string(binaryError)], mode)
        }
        // From a reader function too.
        let reader = try rt.run(string: """
            local s = string.dump(function() return 1 end)
            return load(function() local c = s; s = nil; return c end)
            """)
        XCTAssertEqual(reader, [.nil, .string(binaryError)])
        // Text loads whatever the mode; the environment argument, given or absent, as in load.
        XCTAssertEqual(try rt.run(string: "return load('return 1 + 1', 'x', 'b')()"), [2])
        XCTAssertEqual(try rt.run(string: "x = 1; return load('return x', 'x', 't', {x = 5})(), load('return x')()"), [5, 1])
        XCTAssertEqual(try rt.run(string: "return pcall(load('return x', 'x', 't', nil))").first, false)
        // Argument errors name load, as load's own do.
        XCTAssertEqual(try rt.run(string: "return select(2, pcall(load, {}))"),
                       ["bad argument #1 to 'load' (function expected, got table)"])
        XCTAssertEqual(try rt.run(string: "return select(2, pcall(load, 'x', {}))"),
                       ["bad argument #2 to 'load' (string expected, got table)"])
        // Without the sandbox a binary chunk loads (the check above bites).
        let all = TestRuntimes.make(libraries: .all)
        XCTAssertEqual(try all.run(string: "return load(string.dump(function() return 7 end))()"), [7])
    }

    /// A host running an untrusted chunk in a sandbox gets the same: text only.
    func testTheHostsChunksAreTextOnlyInASandbox() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString).luac")
        defer { try? FileManager.default.removeItem(at: file) }
        let all = TestRuntimes.make(libraries: .all)
        XCTAssertEqual(try all.run(string: "local f = io.open(..., 'wb'); f:write(string.dump(function() return 42 end)); f:close()",
                                   arguments: [file.path]), [])
        XCTAssertEqual(try all.run(file: file.path), [42])
        let rt = TestRuntimes.make(libraries: .sandbox)
        XCTAssertThrowsError(try rt.run(file: file.path)) { error in
            XCTAssertTrue("\(error)".contains("attempt to load a binary chunk"), "\(error)")
        }
        let dump = try all.run(string: "return string.dump(function() return 1 end)").first?.stringValue ?? ""
        XCTAssertThrowsError(try rt.run(string: dump)) { error in
            XCTAssertTrue("\(error)".contains("attempt to load a binary chunk"), "\(error)")
        }
    }

    func testRequireFindsLuaModulesOnlyOnTheFixedPath() throws {
        let rt = TestRuntimes.make(libraries: .sandbox)
        // preload, Lua files (text only), and a searcher that refuses C modules.
        XCTAssertEqual(try rt.run(string: "return #package.searchers"), [3])
        let missing = try rt.run(string: "return select(2, pcall(require, 'no_such_module_here'))").first?.stringValue ?? ""
        XCTAssertTrue(missing.hasPrefix("module 'no_such_module_here' not found:"), missing)
        XCTAssertTrue(missing.contains("no field package.preload['no_such_module_here']"), missing)
        XCTAssertTrue(missing.contains("/no_such_module_here.lua'"), missing)
        XCTAssertTrue(missing.hasSuffix("\n\tno C modules in the sandbox"), missing)
        XCTAssertFalse(missing.contains(".so'"), missing)
        // package.path reads as the path in use and cannot be changed, not even through rawset
        // after removing the metatable (which is protected).
        let path = try rt.run(string: "return package.path").first?.stringValue ?? ""
        XCTAssertTrue(path.contains("?.lua"), path)
        let change = try rt.run(string: "return select(2, pcall(function() package.path = '/etc/?' end))").first?.stringValue ?? ""
        XCTAssertTrue(change.hasSuffix("package.path cannot be changed in the sandbox"), change)
        XCTAssertEqual(try rt.run(string: "return getmetatable(package), pcall(setmetatable, package, nil)"),
                       [false, false, "cannot change a protected metatable"])
        XCTAssertEqual(try rt.run(string: "rawset(package, 'path', '/etc/?'); return package.path"), ["/etc/?"])
        let after = try rt.run(string: "return select(2, pcall(require, 'passwd'))").first?.stringValue ?? ""
        XCTAssertFalse(after.contains("/etc/passwd"), after)
        // package.preload is how a host offers modules to a sandboxed script.
        rt.preload(module: "greeting", source: "return { hello = function() return 'hi' end }")
        XCTAssertEqual(try rt.run(string: "return require('greeting').hello()"), ["hi"])
    }

    /// `.restricted` never opens io or debug, whatever else is asked for.
    func testRestrictedWinsOverAskedForLibraries() throws {
        let rt = TestRuntimes.make(libraries: [.all, .restricted])
        XCTAssertEqual(try rt.run(string: "return io, debug, os.execute, dofile, package.loadlib, require('dispatch').fd"),
                       [.nil, .nil, .nil, .nil, .nil, .nil])
        XCTAssertEqual(try rt.run(string: "return package.loaded.io, package.loaded.debug"), [.nil, .nil])
        // Without package: the global dispatch, restricted too.
        let bare = TestRuntimes.make(libraries: [.base, .restricted])
        XCTAssertEqual(try bare.run(string: "return type(dispatch.queue), dispatch.fd, dofile, require"),
                       ["function", .nil, .nil, .nil])
    }

    /// The library set of an interpreter, as a string that two interpreters can compare: the
    /// standard libraries' names, whether dispatch's absent names are nil (not raising), and
    /// what load and require do.
    static let fingerprint = """
        local names = {}
        for k, v in pairs(_G) do
          if k ~= '_G' and k ~= 'arg' and k ~= 'dispatch' then
            names[#names + 1] = k
            if type(v) == 'table' then for k2 in pairs(v) do names[#names + 1] = k .. '.' .. tostring(k2) end end
          end
        end
        table.sort(names)
        local d = require('dispatch')
        for _, k in ipairs{'fd', 'io', 'http', 'net', 'kill', 'exit'} do
          local ok, v = pcall(function() return d[k] end)
          names[#names + 1] = k .. (ok and v == nil and ' absent' or ' present')
        end
        names[#names + 1] = tostring(({load(string.dump(function() end))})[2])
        names[#names + 1] = tostring(#package.searchers)
        names[#names + 1] = tostring(({pcall(function() package.path = package.path end)})[2]):match('cannot be changed') or 'path can change'
        return table.concat(names, ' ')
        """

    /// Worker interpreters (concurrent_map's and a pool's) have the runtime's library set.
    func testWorkersAndConcurrentMapBodiesSeeTheSameSet() throws {
        for libraries in [LuaLibraries.sandbox, .safe, .all] {
            let rt = TestRuntimes.make(libraries: libraries)
            guard libraries.contains(.package) else { continue }
            let main = try rt.run(string: Self.fingerprint).first?.stringValue ?? ""
            XCTAssertFalse(main.isEmpty)
            let fn = "function() \(Self.fingerprint) end"
            let mapped = try rt.run(string: "return table.concat(require('dispatch').concurrent_map(3, \(fn)), '\\n')")
            for line in (mapped.first?.stringValue ?? "").split(separator: "\n", omittingEmptySubsequences: false) {
                XCTAssertEqual(String(line), main, "concurrent_map, \(libraries)")
            }
            // Jobs whose only upvalue is the globals run as plain jobs; one with another upvalue
            // is copied as a graph: both ways.
            let pooled = try rt.run(string: """
                local pool = require('dispatch').workers{count = 2}
                local jobs, tag = {}, {}
                for i = 1, 2 do jobs[i] = pool:submit(\(fn)) end
                for i = 3, 4 do jobs[i] = pool:submit(function() local _ = tag; return (\(fn))() end) end
                local out = {}
                for i = 1, 4 do out[i] = select(2, assert(jobs[i]:wait())) end
                pool:close()
                return table.concat(out, '\\n')
                """)
            for line in (pooled.first?.stringValue ?? "").split(separator: "\n", omittingEmptySubsequences: false) {
                XCTAssertEqual(String(line), main, "workers, \(libraries)")
            }
        }
    }

    /// A sandboxed runtime and a full one share the process's threads: each one's concurrent_map
    /// bodies still get its own set (a thread keeps one worker interpreter per set).
    func testConcurrentMapOfTwoRuntimesOnTheSameThreads() throws {
        let sandbox = TestRuntimes.make(libraries: .sandbox)
        let all = TestRuntimes.make(libraries: .all)
        let body = "return table.concat(require('dispatch').concurrent_map(16, function() return tostring(io ~= nil) end), ' ')"
        for _ in 0..<3 {
            XCTAssertEqual(try all.run(string: body).first?.stringValue, Array(repeating: "true", count: 16).joined(separator: " "))
            XCTAssertEqual(try sandbox.run(string: body).first?.stringValue, Array(repeating: "false", count: 16).joined(separator: " "))
        }
    }

    /// What stays of `dispatch` works: queues, timers, data, tasks.
    func testWhatStaysWorks() throws {
        let rt = TestRuntimes.make(libraries: .sandbox)
        let r = try rt.run(string: """
            local d = require('dispatch')
            local q, out = d.queue('s'), {}
            local g = d.group()
            for i = 1, 3 do q:async(function() out[#out + 1] = i end, {group = g}) end
            g:wait()
            local data = d.data('abc') .. d.data('def')
            local t = d.task(function() d.sleep(0.001); return 'task' end)
            local s = d.semaphore(0)
            local timer
            timer = d.source.timer{interval = 0.001, queue = q, handler = function() timer:cancel(); s:signal() end}
            timer:resume()
            s:wait()
            return table.concat(out, ','), data:bytes(), t:wait()
            """)
        XCTAssertEqual(r, ["1,2,3", "abcdef", true, "task"])
    }
}
