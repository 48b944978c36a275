import CLua
import CLuaShim
import Dispatch
import Synchronization

// libdispatch's private layout, in one place: where Swift's Dispatch wrappers keep the C objects
// that the C functions (ld_dispatch.h) take.

/// The C objects that Swift's Dispatch wrappers hold, for the C functions it does not expose.
enum RawDispatch {
    /// The `dispatch_object_t` a `DispatchQueue` or `DispatchGroup` wraps, or nil if this
    /// Dispatch lays its wrappers out otherwise. swift-corelibs-libdispatch's wrappers hold it
    /// as their only stored property (`__wrapped`), right after the object's header; that is
    /// checked once, on the main queue, whose C object the C API names. (Reading it through
    /// `Mirror` instead cost every start-up dozens of protocol-conformance lookups.)
    static func pointer(_ object: AnyObject) -> UnsafeMutableRawPointer? {
        layoutHolds ? wrapped(object) : nil
    }

    private static let layoutHolds: Bool = wrapped(DispatchQueue.main) == ld_main_queue_object()

    private static func wrapped(_ object: AnyObject) -> UnsafeMutableRawPointer? {
        Unmanaged.passUnretained(object).toOpaque()
            .load(fromByteOffset: 2 * MemoryLayout<UInt>.size, as: UnsafeMutableRawPointer?.self)
    }

    /// The `dispatch_queue_t` of `queue`, checked against its label; nil if it cannot be found.
    static func queue(_ queue: DispatchQueue) -> UnsafeMutableRawPointer? {
        guard let p = pointer(queue), let label = ld_queue_label(p), String(cString: label) == queue.label else { return nil }
        return p
    }
}
