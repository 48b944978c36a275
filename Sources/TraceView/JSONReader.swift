/// A small JSON reader (RFC 8259) over bytes: enough for trace files, without Foundation, which
/// the CLI does not load. Numbers are doubles; objects keep their last value per key.
enum JSON {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    struct SyntaxError: Error, CustomStringConvertible {
        let offset: Int
        let what: String
        var description: String { "invalid JSON at byte \(offset): \(what)" }
    }

    static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> JSON {
        var r = Reader(bytes: bytes)
        let value = try r.value(depth: 0)
        r.skipSpace()
        guard r.i == bytes.count else { throw SyntaxError(offset: r.i, what: "text after the value") }
        return value
    }

    var string: String? { if case .string(let s) = self { s } else { nil } }
    var double: Double? { if case .number(let d) = self { d } else { nil } }
    var int: Int? { double.flatMap { $0 == $0.rounded() && abs($0) < 9e15 ? Int($0) : nil } }
    var object: [String: JSON]? { if case .object(let o) = self { o } else { nil } }
    var array: [JSON]? { if case .array(let a) = self { a } else { nil } }
    subscript(key: String) -> JSON? { object?[key] }

    private struct Reader {
        let bytes: [UInt8]
        var i = 0

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }

        func fail(_ what: String) -> SyntaxError { SyntaxError(offset: i, what: what) }

        mutating func value(depth: Int) throws(SyntaxError) -> JSON {
            guard depth < 512 else { throw fail("nested too deeply") }
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end") }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                var o: [String: JSON] = [:]
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(o) }
                while true {
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("a key expected") }
                    let key = try string()
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("':' expected") }
                    i += 1
                    o[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard i < bytes.count else { throw fail("unexpected end") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(o) }
                    throw fail("',' or '}' expected")
                }
            case UInt8(ascii: "["):
                i += 1
                var a: [JSON] = []
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
                while true {
                    a.append(try value(depth: depth + 1))
                    skipSpace()
                    guard i < bytes.count else { throw fail("unexpected end") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
                    throw fail("',' or ']' expected")
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): try word("true"); return .bool(true)
            case UInt8(ascii: "f"): try word("false"); return .bool(false)
            case UInt8(ascii: "n"): try word("null"); return .null
            default:
                return .number(try number())
            }
        }

        mutating func word(_ w: StaticString) throws(SyntaxError) {
            let n = w.utf8CodeUnitCount
            guard i + n <= bytes.count else { throw fail("unexpected end") }
            for k in 0..<n where bytes[i + k] != w.utf8Start[k] { throw fail("unexpected character") }
            i += n
        }

        mutating func number() throws(SyntaxError) -> Double {
            let start = i
            while i < bytes.count, "+-0123456789.eE".utf8.contains(bytes[i]) { i += 1 }
            guard i > start, let d = Double(String(decoding: bytes[start..<i], as: UTF8.self)) else {
                i = start
                throw fail("a value expected")
            }
            return d
        }

        mutating func string() throws(SyntaxError) -> String {
            i += 1  // the opening quote
            var out: [UInt8] = []
            while true {
                guard i < bytes.count else { throw fail("unterminated string") }
                let c = bytes[i]
                i += 1
                if c == UInt8(ascii: "\"") { break }
                if c != UInt8(ascii: "\\") {
                    out.append(c)
                    continue
                }
                guard i < bytes.count else { throw fail("unterminated string") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar), i + 6 <= bytes.count, bytes[i] == UInt8(ascii: "\\"),
                       bytes[i + 1] == UInt8(ascii: "u") {
                        i += 2
                        let low = try hex4()
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    out.append(contentsOf: Array(String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8))
                default: out.append(e)  // \" \\ \/
                }
            }
            return String(decoding: out, as: UTF8.self)
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard i + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[i..<i + 4], as: UTF8.self), radix: 16) else {
                throw fail("bad \\u escape")
            }
            i += 4
            return v
        }
    }
}
