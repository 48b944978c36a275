import XCTest
@testable import LuaDispatch

/// The trace writer's number formatting, against Swift's own.
final class TraceJSONBytesTests: XCTestCase {
    func testIntegersAndMicroseconds() {
        for n: UInt64 in [0, 7, 10, 999, 1000, 1001, 123_456_789, UInt64(Int64.max), UInt64.max] {
            var b = JSONBytes(capacity: 0)
            b.add(n)
            XCTAssertEqual(String(decoding: b.bytes, as: UTF8.self), String(n))
            var m = JSONBytes(capacity: 0)
            m.micro(n)
            let frac = String(n % 1000)
            XCTAssertEqual(String(decoding: m.bytes, as: UTF8.self),
                           "\(n / 1000)." + String(repeating: "0", count: 3 - frac.count) + frac)
        }
        for n in [0, -1, 42, Int.min, Int.max] {
            var b = JSONBytes(capacity: 0)
            b.add(n)
            XCTAssertEqual(String(decoding: b.bytes, as: UTF8.self), String(n))
        }
    }
}
