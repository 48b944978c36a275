import CLua
import CLuaShim

/// `dispatch.switch_interval([seconds])`: how long a block may keep the interpreter while another
/// thread waits for it (Control/Switching.swift).
enum SwitchingBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("switch_interval") { a throws(LuaError) in
            let rt = a.runtime
            if !a.isNoneOrNil(1) {
                let seconds = try a.number(1)
                guard seconds >= 0 else {
                    let shown = Checked.shown(a.L, 1)
                    throw .argument(1, "interval must be >= 0, got \(shown)")
                }
                rt.switchInterval = seconds
            }
            lua_pushnumber(a.L, rt.switchInterval)
            return 1
        }
    }
}
