import CLuaShim

/// The idle Lua threads of the pool (`Runtime.takeThread`). An OS thread gets back the Lua thread
/// it gave back last when it can: a block's Lua thread (its stack and call frames) then stays in
/// the cache of the core that runs the block, instead of moving to whichever core runs the next
/// one, as a shared last-in-first-out list would make it do when two workers take turns (blocks
/// of a concurrent queue). Lock held throughout.
final class LuaThreadPool {
    /// OS threads 1..<slots (`ld_thread_number`) have a slot each, a cache line apart so that two
    /// workers never write one line; others share the list.
    private static let slots = 64, stride = 8
    private let byThread = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: slots * stride)
    @exclusivity(unchecked) private var shared: [OpaquePointer] = []

    init() { byThread.initialize(repeating: nil, count: Self.slots * Self.stride) }

    deinit { byThread.deallocate() }

    @inline(__always) func take() -> OpaquePointer? {
        let n = Int(ld_thread_number())
        if n < Self.slots, let T = byThread[n * Self.stride] {
            byThread[n * Self.stride] = nil
            return T
        }
        return shared.popLast()
    }

    @inline(__always) func give(_ T: OpaquePointer) {
        let n = Int(ld_thread_number())
        if n < Self.slots, byThread[n * Self.stride] == nil {
            byThread[n * Self.stride] = T
        } else {
            shared.append(T)
        }
    }

    func removeAll() {
        byThread.update(repeating: nil, count: Self.slots * Self.stride)
        shared.removeAll()
    }
}
