import CLuaShim
import Dispatch
import Foundation
import XCTest

/// The interpreter lock (lock.c): it excludes, it wakes the threads that sleep on it, a timed
/// wait gives up, and a waiter leaves the lock to a holder that comes straight back for it.
final class InterpreterLockTests: XCTestCase {
    /// A lock and a few words, shared by the test's threads (the lock, or the test's own waits,
    /// order their accesses).
    private final class Shared: @unchecked Sendable {
        let lock = ld_lock_new()!
        let words = UnsafeMutablePointer<Int>.allocate(capacity: 4)
        init() { words.initialize(repeating: 0, count: 4) }
        deinit {
            ld_lock_free(lock)
            words.deallocate()
        }
    }

    /// Runs `body(i)` on `threads` threads at once; whether all finished within `seconds`.
    private func onThreads(_ threads: Int, seconds: Double = 60, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
        let group = DispatchGroup()
        for i in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                body(i)
                group.leave()
            }
        }
        return group.wait(timeout: .now() + seconds) == .success
    }

    /// Spins `n` rounds (time spent with or without the lock, which the optimizer keeps).
    private static func work(_ n: Int) {
        var x = 0
        for i in 0..<n { x = x &+ i; withUnsafeMutablePointer(to: &x) { _ = $0.pointee } }
    }

    func testExcludesUnderContention() {
        let s = Shared()
        XCTAssertTrue(onThreads(4) { _ in
            for _ in 0..<50_000 {
                ld_lock_acquire(s.lock)
                if ld_lock_held() != s.lock { s.words[1] += 1 }
                // A read, a pause, a write: a second holder would lose increments.
                let v = s.words[0]
                Self.work(3)
                s.words[0] = v + 1
                ld_lock_release(s.lock)
            }
        })
        XCTAssertEqual(s.words[0], 200_000)
        XCTAssertEqual(s.words[1], 0, "ld_lock_held() did not name the lock while it was held")
        XCTAssertNil(ld_lock_held())
    }

    /// Waiters that sleep (the holder keeps the lock far past their look budget) are each
    /// woken in turn by a release.
    func testSleepingWaitersAreWoken() {
        let s = Shared()
        ld_lock_acquire(s.lock)
        let got = DispatchSemaphore(value: 0)
        for _ in 0..<3 {
            Thread.detachNewThread {
                ld_lock_acquire(s.lock)
                Thread.sleep(forTimeInterval: 0.005)
                ld_lock_release(s.lock)
                got.signal()
            }
        }
        Thread.sleep(forTimeInterval: 0.05)
        ld_lock_release(s.lock)
        for i in 0..<3 {
            XCTAssertEqual(got.wait(timeout: .now() + 10), .success, "waiter \(i + 1) of 3 never got the lock")
        }
    }

    func testTimedAcquireGivesUpWhileHeldAndTakesAFreeLock() {
        let s = Shared()
        let holding = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            ld_lock_acquire(s.lock)
            holding.signal()
            done.wait()
            ld_lock_release(s.lock)
        }
        holding.wait()
        let start = DispatchTime.now().uptimeNanoseconds
        XCTAssertEqual(ld_lock_try_acquire(s.lock, 50), 0, "took a lock another thread holds")
        let waited = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        XCTAssertGreaterThanOrEqual(waited, 45, "gave up before its time")
        XCTAssertEqual(ld_lock_try(s.lock), 0)
        XCTAssertNil(ld_lock_held())
        done.signal()
        XCTAssertEqual(ld_lock_try_acquire(s.lock, 10_000), 1, "did not take the lock once released")
        XCTAssertEqual(ld_lock_held(), s.lock)
        ld_lock_release(s.lock)
    }

    /// Timed and untimed waiters, with holders that keep the lock past the look budget now and
    /// then: every thread gets through (a timed waiter that gives up after being woken passes
    /// the wake on).
    func testMixedWaitersAllGetThrough() {
        let s = Shared()
        XCTAssertTrue(onThreads(6) { i in
            for round in 0..<200 {
                if i % 2 == 0 {
                    ld_lock_acquire(s.lock)
                    if round % 20 == 0 { usleep(200) } else { Self.work(50) }
                    ld_lock_release(s.lock)
                } else if ld_lock_try_acquire(s.lock, Int32(round % 3)) != 0 {
                    Self.work(50)
                    ld_lock_release(s.lock)
                }
            }
        }, "a waiter was left asleep")
    }

    /// The lock is unfair within a bound: a holder may take it back before a waiter looks, but
    /// not once the waiter has waited long enough to be owed it (tens of microseconds of its own
    /// looking). Then a free lock is the waiter's: even a try from the thread that just released
    /// it fails. The holder lets go once the waiter is owed the lock, however long a loaded
    /// machine takes to start it and let it look: a fixed sleep before the release let a waiter
    /// not yet owed it lose the lock, as the lock allows.
    func testAWaiterOwedTheLockGetsItBeforeTheHolderTakesItBack() {
        let s = Shared()
        ld_lock_acquire(s.lock)
        let got = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            ld_lock_acquire(s.lock)
            s.words[0] = 1
            ld_lock_release(s.lock)
            got.signal()
        }
        let deadline = Date(timeIntervalSinceNow: 30)
        while ld_lock_owed(s.lock) == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        XCTAssertEqual(ld_lock_owed(s.lock), 1, "the waiter is owed the lock after 30 s of waiting")
        ld_lock_release(s.lock)
        let retaken = ld_lock_try(s.lock)
        // Read under the lock: a loaded machine may keep this thread off its core between the
        // release and the try for as long as the waiter takes to have the lock and let it go.
        let waiterHadIt = retaken != 0 && s.words[0] == 1
        if retaken != 0 { ld_lock_release(s.lock) }
        XCTAssertTrue(retaken == 0 || waiterHadIt, "the releasing thread took the lock back from a waiter owed it")
        XCTAssertEqual(got.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(s.words[0], 1)
    }
}
