import XCTest
@testable import LuaDispatch
import CLuaShim

/// `Runtime` is the front of the parts it owns (the Lua states, the work ledger, interpreter
/// control, error reporting): each keeps its own invariants.
final class RuntimePartsTests: XCTestCase {
    func testTheLedgerCountsEachRecordBlockAsAUnit() {
        let ledger = WorkLedger()
        ledger.pending.store(3, ordering: .relaxed)
        XCTAssertEqual(ledger.outstandingUnits, 3)
        // Five record blocks are one unit of `pending` (3 = 2 others + the records).
        ledger.recordsPending.store(5, ordering: .relaxed)
        XCTAssertEqual(ledger.outstandingUnits, 7)
    }

    func testDeferredReferencesAreTakenOnce() {
        let states = LuaStates()
        XCTAssertFalse(states.hasDeferredRefs.load(ordering: .relaxed))
        states.deferRef(7)
        states.deferRef(9)
        XCTAssertTrue(states.hasDeferredRefs.load(ordering: .relaxed), "a reference is queued")
        XCTAssertEqual(states.takeDeferredRefs(), [7, 9])
        XCTAssertFalse(states.hasDeferredRefs.load(ordering: .relaxed))
        XCTAssertEqual(states.takeDeferredRefs(), [])
    }

    func testControlSeesTheEndInTheLocksWord() {
        let lock = ld_lock_new()!
        defer { ld_lock_free(lock) }
        let control = InterpreterControl(lock: lock, budget: nil)
        XCTAssertFalse(control.terminating)
        ld_lock_terminate(lock, 1)
        XCTAssertTrue(control.terminating)
        ld_lock_end_termination(lock)
        XCTAssertFalse(control.terminating)
    }

    func testTheHostsErrorHandlerIsTheOneUncaughtErrorsReach() {
        // `runLua` sets the runtime's public `uncaughtErrorHandler` to its recorder.
        let run = runLua("dispatch.global():async(function() error('boom') end)")
        XCTAssertEqual(run.errors.count, 1)
        XCTAssertTrue(run.errors.first?.message.contains("boom") ?? false, "\(run.errors.map(\.message))")
    }

    func testRuntimeKeepsFewStoredPropertiesOfItsOwn() {
        let rt = TestRuntimes.make()
        let own = Mirror(reflecting: rt).children.compactMap(\.label)
        XCTAssertLessThanOrEqual(own.count, 15, own.joined(separator: ", "))
    }
}
