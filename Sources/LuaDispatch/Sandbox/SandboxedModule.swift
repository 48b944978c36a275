import CLua
import CLuaShim

/// `dispatch` as a sandboxed interpreter has it (`LuaLibraries.restricted`): queues, work items,
/// groups, semaphores, timers, data, tasks, workers and channels, and nothing that reaches a
/// descriptor, a file, a process, a signal or the network. The module is built whole and then
/// pared to `kept`, so a binding added later stays out of the sandbox until it is listed here
/// (SandboxTests fails until every name is either kept or `removed`).
enum SandboxedModule {
    /// What stays: a name kept whole (nil) or a table of which only the names given stay.
    static let kept: [String: Set<String>?] = [
        "main": nil, "global": nil, "queue": nil, "current_label": nil, "concurrent_perform": nil,
        "get_specific": nil, "specific_key": nil, "work_item": nil, "once": nil, "group": nil,
        "semaphore": nil, "now": nil, "walltime": nil, "thread": nil, "sleep": nil, "pid": nil,
        "errno_name": nil, "set_error_handler": nil, "run": nil, "switch_interval": nil,
        "task": nil, "in_task": nil, "await": nil,
        "concurrent_map": nil, "workers": nil, "channel": nil,
        // dispatch.data(s) stays callable; data.map reads a file.
        "data": [],
        "source": ["timer", "data_add", "data_or", "data_replace"],
    ]

    /// What goes, and why (docs/embedding.md lists the same).
    static let removed: [String: String] = [
        "fd": "descriptors and files",
        "io": "descriptors and files",
        "http": "the network",
        "net": "the network",
        "kill": "signals to any process",
        "exit": "it would end the host's process",
        "data.map": "files",
        "source.read": "descriptors",
        "source.write": "descriptors",
        "source.file": "files",
        "source.process": "other processes",
        "source.signal": "signals (a handler that changes the process's signal disposition)",
    ]

    /// Removes from the module table at `module` every name `kept` does not list. Lock held.
    static func restrict(_ L: OpaquePointer, _ module: Int32) {
        for name in keys(L, module) {
            guard let entry = kept[name] else {
                lua_pushnil(L)
                Lua.setField(L, module, name)
                continue
            }
            guard let names = entry, Lua.getField(L, module, name) == LUA_TTABLE else {
                if entry != nil { lua_settop(L, module) }
                continue
            }
            let table = lua_gettop(L)
            for key in keys(L, table) where !names.contains(key) {
                lua_pushnil(L)
                Lua.setField(L, table, key)
            }
            lua_settop(L, module)
        }
    }

    /// The string keys of the table at `t`.
    private static func keys(_ L: OpaquePointer, _ t: Int32) -> [String] {
        var keys: [String] = []
        lua_pushnil(L)
        while lua_next(L, t) != 0 {
            ld_pop(L, 1)
            if lua_type(L, -1) == LUA_TSTRING, let key = Lua.string(L, -1) { keys.append(key) }
        }
        return keys
    }
}

extension Runtime {
    /// The mode chunks the host runs are loaded with: text only in a sandbox (a binary chunk
    /// could crash the VM; see `LuaLibraries.restricted`), else text or binary as `lua` does.
    var chunkMode: String? { libraries.contains(.restricted) ? "t" : nil }
}
