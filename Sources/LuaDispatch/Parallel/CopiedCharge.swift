/// A string in transit between interpreters (a channel message), its bytes charged to the
/// memory limit of the interpreter that copied it while they live.
final class CopiedBytes: @unchecked Sendable {
    let bytes: [UInt8]
    private let charge: MemoryCharge

    init(_ bytes: [UInt8], _ rt: Runtime) {
        self.bytes = bytes
        charge = rt.charge(NativeCost.copied + bytes.count)
    }
}

extension CopiedGraph {
    /// What the graph holds outside any Lua state: its byte pool (as allocated), and its nodes and values by
    /// their strides, with the graph itself.
    var heldBytes: Int {
        NativeCost.copied + bytes.capacity + nodes.count * MemoryLayout<Node>.stride
            + values.count * MemoryLayout<Value>.stride + upvalues.count * MemoryLayout<Upvalue>.stride
            + max(0, roots.count - 4) * MemoryLayout<Value>.stride
    }

    /// Charges the finished graph to `rt`'s memory limit, for as long as it lives.
    func chargeTo(_ rt: Runtime) {
        charge = rt.charge(heldBytes)
    }
}
