import CLua
import CLuaShim
import Dispatch

/// `dispatch.http.get(url, queue, fn(body, status, err))`: a system API that completes on a
/// thread of its own, for the group scenarios. The request counts as outstanding work until
/// `fn` ran on `queue`. The transfer is libcurl's, loaded on first use (see http.c): nothing of
/// it is loaded at start-up.
enum HTTPBinding {
    static func install(_ m: inout ModuleSpec) {
        m.table("http") { t in
            t.function("get") { a throws(LuaError) in
                let url = try a.string(1)
                guard isHTTPURL(url) else { throw .argument(1, "invalid http or https URL '\(url)'") }
                let q = try a.queueOrDefault(2)
                let fn = try a.functionRef(3)
                let rt = a.runtime
                rt.workAdded()
                DispatchQueue.global().async {
                    var r = ld_http_get(url)
                    let bytes = r.body.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: r.length)) }
                    let status = r.error == nil ? Int(r.status) : nil
                    let message = r.error.map { String(cString: $0) }
                    ld_http_result_free(&r)
                    rt.asyncHandler(fn, on: q) { T in
                        if let bytes {
                            bytes.withUnsafeBytes { p in
                                _ = lua_pushlstring(T, p.baseAddress?.assumingMemoryBound(to: CChar.self), p.count)
                            }
                        } else {
                            lua_pushnil(T)
                        }
                        if let status { lua_pushinteger(T, lua_Integer(status)) } else { lua_pushnil(T) }
                        if let message { Lua.push(T, message) } else { lua_pushnil(T) }
                        return 3
                    }
                }
                return 0
            }
        }
    }

    /// `http://` or `https://` (any case) followed by a host: a non-empty authority without
    /// spaces, as URL parsing requires.
    static func isHTTPURL(_ s: String) -> Bool {
        let lower = s.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") { rest = s.dropFirst(7) }
        else if lower.hasPrefix("https://") { rest = s.dropFirst(8) }
        else { return false }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@").last.map { h -> Substring in
            if h.hasPrefix("[") { return h }
            return h.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        } ?? ""
        return !host.isEmpty && !s.contains(" ")
    }
}
