import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The timeline page in a real browser: Debian's `chromium`, headless, loads the page made from
/// a scenario's trace; the test reads the DOM after the page's script ran and checks that it
/// holds the lanes, blocks and arrows of the trace, and that nothing was fetched from anywhere.
final class TraceBrowserTests: XCTestCase {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }

    func testPageFromScenarioTraceInHeadlessChromium() throws {
        let chromium = try XCTUnwrap(Self.chromium, "chromium is not installed (scripts/setup --tests installs it)")
        let dir = try TraceCLITests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try CLI.run(["scenarios", "run", "7.1", "3.8", "--scale", "0.2", "--trace", dir.path])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        for id in ["3.8", "7.1"] {
            let trace = dir.appendingPathComponent("\(id).json"), page = dir.appendingPathComponent("\(id).html")
            let view = try CLI.run(["trace", "view", trace.path, "-o", page.path])
            XCTAssertEqual(view.status, 0, view.stderr)
            let html = try String(contentsOf: page, encoding: .utf8)
            // Self-contained: no reference to anything outside the page.
            for needle in ["src=", "href=", "url(http", "@import", "<link", "fetch(", "XMLHttpRequest"] {
                XCTAssertFalse(html.contains(needle), "\(id): the page contains \(needle)")
            }
            let events = try TraceCLITests.events(trace)
            let blocks = TraceCLITests.blocks(events)
            let threads = events.filter { $0["name"] as? String == "thread_name" }
                .map { ($0["args"] as! [String: Any])["name"] as! String }
            let flows = events.filter { $0["ph"] as? String == "f" }.count

            let proxy = try CountingListener()
            defer { proxy.stop() }
            let profile = dir.appendingPathComponent("profile-\(id)")
            let dom = try Self.dumpDOM(chromium, page: page, proxyPort: proxy.port, profile: profile)
            XCTAssertTrue(dom.contains("data-drawn="), "\(id): the page's script did not finish:\n\(dom.prefix(2000))")
            XCTAssertTrue(dom.contains("data-resources=\"0\""), "\(id): the page loaded resources")
            XCTAssertFalse(dom.contains("NaN"), "\(id): the script drew NaN coordinates")
            XCTAssertEqual(Self.count(dom, "class=\"block\""), blocks.count, id)
            XCTAssertEqual(Self.count(dom, "class=\"flow\""), flows, id)
            XCTAssertEqual(Self.count(dom, "class=\"lane\""), threads.count, id)
            for name in threads { XCTAssertTrue(dom.contains(">\(name)</text>"), "\(id): lane \(name)") }
            XCTAssertTrue(dom.contains(">main thread</text>"))
            // The axis counts from the trace's start.
            XCTAssertTrue(dom.contains(">0 µs</text>"), id)
            XCTAssertEqual(Self.pageRequests(proxy), [], "\(id): the page made network requests")
        }
    }

    /// The check bites: a page that loads an image from the network is seen by the proxy.
    func testProxySeesAPageThatFetches() throws {
        let chromium = try XCTUnwrap(Self.chromium, "chromium is not installed (scripts/setup --tests installs it)")
        let dir = try TraceCLITests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let page = dir.appendingPathComponent("leak.html")
        try "<!DOCTYPE html><body><img src=\"http://trace-probe.invalid/p.png\"></body>".write(to: page, atomically: false, encoding: .utf8)
        let proxy = try CountingListener()
        defer { proxy.stop() }
        _ = try Self.dumpDOM(chromium, page: page, proxyPort: proxy.port, profile: dir.appendingPathComponent("profile"))
        XCTAssertEqual(Self.pageRequests(proxy).filter { $0.contains("trace-probe.invalid") }.count, 1, "\(proxy.requests)")
    }

    /// Requests other than the browser's own (its component updater, clock and account checks,
    /// which headless Chromium makes whatever the page and the flags), and other than
    /// connections that carried no request at all: those a page caused.
    static func pageRequests(_ proxy: CountingListener) -> [String] {
        let browserOwn = ["update.googleapis.com", "accounts.google.com", "clients2.google.com"]
        return proxy.requests.filter { line in
            line != CountingListener.noRequest && !browserOwn.contains { line.contains(" \($0)") || line.contains("//\($0)/") }
        }
    }

    static func count(_ s: String, _ needle: String) -> Int { s.components(separatedBy: needle).count - 1 }

    /// Loads `page` and returns the DOM after its scripts ran. Every network request would go
    /// through the proxy at `proxyPort` (loopback included), which counts them.
    static func dumpDOM(_ chromium: String, page: URL, proxyPort: Int, profile: URL) throws -> String {
        let r = try CLI.run(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                       "--disable-background-networking", "--disable-component-update", "--disable-sync",
                       "--disable-default-apps", "--no-default-browser-check", "--metrics-recording-only", "--no-pings",
                       "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,Translate,MediaRouter",
                       "--user-data-dir=\(profile.path)",
                       "--proxy-server=http://127.0.0.1:\(proxyPort)", "--proxy-bypass-list=<-loopback>",
                       "--virtual-time-budget=2000", "--dump-dom", page.absoluteString],
                            timeout: 90, failOnTimeout: false, executable: URL(fileURLWithPath: chromium))
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout
    }
}

/// A TCP listener on loopback that accepts connections and keeps the first line of each.
final class CountingListener: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var lines: [String] = []
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard bound == 0, listen(fd, 16) == 0 else {
            port = 0
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread.detachNewThread { [self] in serve() }
    }

    private func serve() {
        defer { done.signal() }
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 50) <= 0 {
                if lock.withLock({ stopped }) { return }
                continue
            }
            let c = accept(fd, nil, nil)
            guard c >= 0 else { continue }
            pending.enter()
            // Each connection on its own thread: one that stays idle must not delay the next.
            Thread.detachNewThread { [self] in
                defer { pending.leave() }
                var buf = [UInt8](repeating: 0, count: 512)
                var cpfd = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
                let n = poll(&cpfd, 1, 5000) > 0 ? read(c, &buf, buf.count) : 0
                let line = String(decoding: buf[..<max(n, 0)], as: UTF8.self).split(separator: "\r\n").first.map(String.init)
                    ?? Self.noRequest
                lock.withLock { lines.append(line) }
                close(c)
            }
        }
    }

    /// What a connection that sent nothing is recorded as: Chromium opens connections to its
    /// proxy ahead of need and may close them unused (seen once in CI), which fetches nothing.
    static let noRequest = "(connection without a request)"
    private let pending = DispatchGroup()

    var connections: Int { lock.withLock { lines.count } }
    var requests: [String] { lock.withLock { lines } }

    func stop() {
        lock.withLock { stopped = true }
        done.wait()
        pending.wait()
        close(fd)
    }
}
