import CLua
import CLuaShim

/// Reading the value `ld_msgh` (lua.c's message handler) left on top of a stack: a string with
/// the traceback appended, or the string a `__tostring` metamethod made.
enum ErrorValue {
    static let tracebackMark = "\nstack traceback:\n"

    /// Pops the error value and splits it into its message and its traceback (empty when the
    /// handler appended none). The last mark is the handler's: a message may quote an older one.
    static func pop(_ L: OpaquePointer) -> (message: String, traceback: String) {
        defer { ld_pop(L, 1) }
        guard let text = Lua.string(L, -1) else {
            return ("(error object is a \(String(cString: ld_typename(L, -1))) value)", "")
        }
        return split(text)
    }

    static func split(_ text: String) -> (message: String, traceback: String) {
        let bytes = Array(text.utf8), mark = Array(tracebackMark.utf8)
        guard bytes.count >= mark.count else { return (text, "") }
        var i = bytes.count - mark.count
        while i >= 0 {
            if bytes[i] == mark[0] && bytes[i..<i + mark.count].elementsEqual(mark) {
                return (String(decoding: bytes[..<i], as: UTF8.self),
                        String(decoding: bytes[(i + 1)...], as: UTF8.self))
            }
            i -= 1
        }
        return (text, "")
    }
}
