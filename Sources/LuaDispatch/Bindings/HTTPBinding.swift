import CLua
import CLuaShim
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `dispatch.http.get(url, queue, fn(body, status, err))`: a system API that completes on a
/// thread of its own, for the group scenarios. The request counts as outstanding work until
/// `fn` ran on `queue`.
enum HTTPBinding {
    static func install(_ m: inout ModuleSpec) {
        m.table("http") { t in
            t.function("get") { a throws(LuaError) in
                let text = try a.string(1)
                guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                      scheme == "http" || scheme == "https", url.host != nil
                else { throw .argument(1, "invalid http or https URL '\(text)'") }
                let q = try a.queueOrDefault(2)
                let fn = try a.functionRef(3)
                let rt = a.runtime
                rt.workAdded()
                let task = session.dataTask(with: url) { body, response, error in
                    let status = (response as? HTTPURLResponse)?.statusCode
                    let message = error.map { String(describing: $0.localizedDescription) }
                    let bytes = body.map { [UInt8]($0) }
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
                task.resume()
                return 0
            }
        }
    }

    /// One session for the process: no caching, so every get reaches the server.
    private static let session: URLSession = {
        let config = URLSessionConfiguration.ephemeral
        config.requestCachePolicy = .reloadIgnoringLocalCacheData
        config.urlCache = nil
        return URLSession(configuration: config)
    }()
}
