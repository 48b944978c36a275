import XCTest

/// Every benchmark row runs once, small: the suite works end to end (no timing is asserted).
final class BenchSmokeTests: XCTestCase {
    func testEveryRowRunsOnceAtASmallSize() throws {
        // The before_* rows compare with another luadispatch binary: the CLI itself here.
        // trace_off's baseline is a build without tracing that only scripts/bench makes: here
        // the row compares the CLI with itself, which runs it end to end.
        let r = try CLI.run(["--quick", "--before", CLI.binary.path],
                            environment: ["LUADISPATCH_NO_TRACING_CLI": CLI.binary.path], timeout: nil,
                            executable: CLI.productsDirectory.appendingPathComponent("luadispatch-bench"))
        let text = r.stdout
        XCTAssertEqual(r.status, 0, text)
        let rows = ["async_serial", "async_concurrent", "sync_round_trip", "perform_overhead", "pending_block_memory",
                    "concurrent_map_primes", "jobs_small", "jobs_parallel", "channel_throughput", "timer_lateness", "file_combine", "net_echo", "net_echo_native", "net_accept", "startup",
                    "tasks_sleep", "task_await_signalled", "task_suspend_resume",
                    "inproc_async_serial", "inproc_async_concurrent", "inproc_sync_round_trip",
                    "inproc_perform_overhead", "inproc_pending_block_memory", "inproc_concurrent_map_primes",
                    "embed_call_lua", "embed_call_lua_async", "embed_typed_host_call", "embed_method_call", "trace_on",
                    "trace_off", "responsiveness", "fairness", "pure_lua", "io_lines",
                    "before_async_serial", "before_async_concurrent", "before_sync_round_trip", "before_concurrent_map_primes"]
        for row in rows {
            let line = text.split(separator: "\n").first { $0.hasPrefix(row + " ") }
            XCTAssertNotNil(line, "row \(row) missing:\n\(text)")
            XCTAssertFalse(line?.contains("error") ?? true, String(line ?? ""))
        }
        XCTAssertTrue(text.contains("outputs identical to cat"), text)
    }
}
