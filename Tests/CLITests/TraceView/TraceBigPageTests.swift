import Foundation
import XCTest

/// A big trace's page in headless Chromium (the helpers of `TraceBrowserTests`): 50,000 blocks
/// make a page of a few MB, not one SVG element per block (30 MB, which a browser takes more
/// than a minute to open), and every block is still there: at full zoom-out merged bars say how
/// many blocks they hold, and zoomed in (`#view=START,END`) the page's script draws each block.
final class TraceBigPageTests: XCTestCase {
    static let blockCount = 50_000

    func testBigTracePageIsSmallAndHoldsEveryBlock() throws {
        let chromium = try XCTUnwrap(TraceBrowserTests.chromium, "chromium is not installed (scripts/setup --tests installs it)")
        let dir = try TraceCLITests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("big.json"), page = dir.appendingPathComponent("big.html")
        let script = "local d = require 'dispatch'; local q = d.queue('q'); local n = 0; "
            + "for i = 1, \(Self.blockCount) do q:async(function() n = n + 1 end) end; q:sync(function() end)"
        let run = try CLI.run(["-e", script], environment: ["LUADISPATCH_TRACE": trace.path])
        XCTAssertEqual(run.status, 0, run.stderr)
        let events = try TraceCLITests.events(trace)
        let blocks = TraceCLITests.blocks(events)
        XCTAssertEqual(blocks.count, Self.blockCount + 2)  // and the main chunk, and the last sync
        let threads = events.filter { $0["name"] as? String == "thread_name" }.map { ($0["args"] as! [String: Any])["name"] as! String }
        // The trace's start as the page has it (to 2 decimals), which #view counts from.
        let t0 = (events.compactMap { $0["ph"] as? String == "M" ? nil : $0["ts"] as? Double }.min()! * 100).rounded() / 100

        let view = try CLI.run(["trace", "view", trace.path, "-o", page.path])
        XCTAssertEqual(view.status, 0, view.stderr)
        // A block and its arrow take about 20 bytes packed; as SVG elements they took 590.
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: page.path)[.size] as? Int)
        XCTAssertLessThan(size, 60 * blocks.count, "the page takes \(size) bytes for \(blocks.count) blocks")

        let proxy = try CountingListener()
        defer { proxy.stop() }
        func load(_ fragment: String, _ name: String) throws -> String {
            let url = try XCTUnwrap(URL(string: page.absoluteString + fragment))
            let dom = try TraceBrowserTests.dumpDOM(chromium, page: url, proxyPort: proxy.port, profile: dir.appendingPathComponent("profile-\(name)"))
            XCTAssertTrue(dom.contains("data-drawn="), "\(name): the page's script did not finish:\n\(dom.prefix(2000))")
            XCTAssertTrue(dom.contains("data-resources=\"0\""), "\(name): the page loaded resources")
            XCTAssertFalse(dom.contains("NaN"), "\(name): the script drew NaN coordinates")
            XCTAssertEqual(TraceBrowserTests.count(dom, "class=\"lane\""), threads.count, name)
            for thread in threads { XCTAssertTrue(dom.contains(">\(thread)</text>"), "\(name): lane \(thread)") }
            return dom
        }

        // Full zoom-out: the merged overview, a few dozen bars that hold every block.
        let whole = try load("", "overview")
        let overview = Self.bars(whole, in: "overview")
        XCTAssertLessThan(overview.count, 1000)
        XCTAssertEqual(overview.reduce(0, +), blocks.count)
        XCTAssertEqual(Self.bars(whole, in: "detail"), [])

        // The whole trace drawn by the script from the packed data, merging by the same rule:
        // the same bars (give or take one where a gap is a pixel wide give or take the
        // rounding of the page's times).
        let end = blocks.map(TraceCLITests.end).max()! - t0
        let redrawn = try load("#view=0,\(end)", "whole")
        XCTAssertTrue(redrawn.contains("<g id=\"overview\" display=\"none\">"))
        XCTAssertEqual(Self.bars(redrawn, in: "detail").reduce(0, +), blocks.count)
        XCTAssertLessThanOrEqual(abs(Self.bars(redrawn, in: "detail").count - overview.count), 1)

        // Zoomed in on five blocks in the middle of the queue: each is drawn, with its details.
        let queue = blocks.filter { TraceCLITests.kind($0) == "async" }.sorted { TraceCLITests.ts($0) < TraceCLITests.ts($1) }
        let k = queue.count / 2
        let from = (TraceCLITests.end(queue[k - 1]) + TraceCLITests.ts(queue[k])) / 2 - t0
        let to = (TraceCLITests.end(queue[k + 4]) + TraceCLITests.ts(queue[k + 5])) / 2 - t0
        let inView = blocks.filter { TraceCLITests.end($0) - t0 >= from && TraceCLITests.ts($0) - t0 <= to }.count
        let zoomed = try load("#view=\(from),\(to)", "zoomed")
        XCTAssertEqual(Self.bars(zoomed, in: "detail"), Array(repeating: 1, count: inView))
        XCTAssertGreaterThanOrEqual(inView, 5)
        XCTAssertGreaterThanOrEqual(TraceBrowserTests.count(zoomed, "<title>q · async · (command line):1\n"), 5)
        XCTAssertGreaterThan(TraceBrowserTests.count(zoomed, ">async :1</text>"), 0)
        XCTAssertGreaterThan(TraceBrowserTests.count(zoomed, "class=\"flow\""), 0)
        XCTAssertEqual(TraceBrowserTests.pageRequests(proxy), [], "the page made network requests")
    }

    /// How many blocks each block bar in the group `id` holds (1 unless it says `data-count`).
    static func bars(_ dom: String, in id: String) -> [Int] {
        guard let start = dom.range(of: "<g id=\"\(id)\"") else { return [] }
        let rest = dom[start.upperBound...]
        // The group ends where the next one (the detail after the overview) or the picture does.
        let end = [rest.range(of: "<g id=\"")?.lowerBound, rest.range(of: "</svg>")?.lowerBound].compactMap { $0 }.min() ?? rest.endIndex
        return rest[..<end].components(separatedBy: "<rect class=\"block\"").dropFirst().map { rect in
            let tag = rect.prefix { $0 != ">" }
            guard let r = tag.range(of: "data-count=\"") else { return 1 }
            return Int(tag[r.upperBound...].prefix { $0 != "\"" }) ?? -1
        }
    }
}
