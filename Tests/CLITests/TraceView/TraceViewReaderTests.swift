import Foundation
import XCTest
@testable import TraceView

/// The view's own JSON reader against Foundation's on the same inputs, and its refusals.
final class TraceViewReaderTests: XCTestCase {
    /// Converts the reader's value to what JSONSerialization gives, for comparison.
    static func plain(_ j: JSON) -> NSObject {
        switch j {
        case .null: NSNull()
        case .bool(let b): NSNumber(value: b)
        case .number(let d): NSNumber(value: d)
        case .string(let s): s as NSString
        case .array(let a): a.map(plain) as NSArray
        case .object(let o): o.mapValues(plain) as NSDictionary
        }
    }

    func testSameValuesAsFoundation() throws {
        let inputs = [
            #"{"a": [1, -2.5, 3e2, 0.001, 1E-3], "b": {"c": null, "d": true, "e": false}, "f": ""}"#,
            #"["quote \" backslash \\ slash \/ tab \t newline \n", "\u00e9\u4e2d", "\ud83d\ude00 emoji", "é raw"]"#,
            #"  [ [], {}, [[[]]], {"k": {"k": {"k": 1}}} ]  "#,
            #"{"dup": 1, "dup": 2}"#,
        ]
        for text in inputs {
            let mine = Self.plain(try JSON.parse(Array(text.utf8)))
            let theirs = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as! NSObject
            XCTAssertEqual(mine, theirs, text)
        }
    }

    func testSameValuesAsFoundationOnARealTrace() throws {
        let rt = try TraceCLITests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: rt) }
        let r = try CLI.run(["scenarios", "run", "3.8", "--scale", "0.1", "--trace", rt.path])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        let data = try Data(contentsOf: rt.appendingPathComponent("3.8.json"))
        XCTAssertEqual(Self.plain(try JSON.parse(Array(data))), try JSONSerialization.jsonObject(with: data) as! NSObject)
    }

    func testRefusesWhatFoundationRefuses() {
        for text in ["[1 2]", #"{"a" 1}"#, #"["unterminated]"#, "tru", "[1] 2", "", #"["\u12"]"#, "{1: 2}"] {
            XCTAssertThrowsError(try JSON.parse(Array(text.utf8)), text)
            XCTAssertThrowsError(try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]), text)
        }
    }
}
