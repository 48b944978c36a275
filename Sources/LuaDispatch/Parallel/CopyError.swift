/// Why a value could not be copied: what it is and where it was found, from the root.
struct CopyError: Error {
    enum Step {
        case upvalue(String)
        case field(Key)
        /// The value is used as a key of the table.
        case key
        case metatable
    }

    /// A table key as an error message shows it: a string, or the text of another value.
    enum Key {
        case string(String)
        case other(String)
    }

    /// "a userdata (dispatch.queue)", "a C function", "a coroutine".
    let what: String
    let path: [Step]

    /// For the function given to `concurrent_map`, whose path starts with one of its upvalues:
    /// "upvalue 'cfg' of function holds a C function that cannot be copied to a worker (at cfg.f)".
    var upvalueMessage: String {
        guard case .upvalue(let name)? = path.first else {
            return "function holds \(what) that cannot be copied to a worker"
        }
        let at = path.count > 1 ? " (at \(Self.render(name, path.dropFirst())))" : ""
        return "upvalue '\(name)' of function holds \(what) that cannot be copied to a worker\(at)"
    }

    /// For a result: "result holds a userdata (dispatch.time) that cannot be copied back (at result.t)";
    /// with `number`, "result #2 holds ...".
    func resultMessage(number: Int? = nil) -> String {
        let at = path.isEmpty ? "" : " (at \(Self.render("result", path[...])))"
        return "result\(number.map { " #\($0)" } ?? "") holds \(what) that cannot be copied back\(at)"
    }

    var resultMessage: String { resultMessage() }

    /// For a value given to be copied (an argument of `submit`, the value of `send`):
    /// "a coroutine cannot be copied to a worker (at value.list[2])".
    func valueMessage(to destination: String) -> String {
        let at = path.isEmpty ? "" : " (at \(Self.render("value", path[...])))"
        return "\(what) cannot be copied \(destination)\(at)"
    }

    /// A Lua-like expression for the place: `cfg.list[2]`, `upvalue 'q' of cfg.f`.
    private static func render(_ root: String, _ steps: ArraySlice<Step>) -> String {
        var expr = root
        for step in steps {
            switch step {
            case .upvalue(let name): expr = "upvalue '\(name)' of \(expr)"
            case .key: expr = "a key of \(expr)"
            case .metatable: expr = "getmetatable(\(expr))"
            case .field(let key): expr += indexing(key)
            }
        }
        return expr
    }

    private static func indexing(_ key: CopyError.Key) -> String {
        switch key {
        case .string(let s):
            let letter = { (c: UInt8) in c == UInt8(ascii: "_") || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "z")) }
            let digit = { (c: UInt8) in c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
            let identifier = s.utf8.first.map(letter) == true && s.utf8.allSatisfy { letter($0) || digit($0) }
            return identifier ? ".\(s)" : "[\"\(s)\"]"
        case .other(let text): return "[\(text)]"
        }
    }
}
