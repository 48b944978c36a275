import CLuaShim

#if canImport(Glibc)
import Glibc
#endif

/// Signals watched by signal sources.
///
/// libdispatch on Linux reads a watched signal from a signalfd, which only sees signals that are
/// pending, i.e. blocked in the thread the kernel picks. On registration it installs a handler
/// that blocks the signal in the catching thread and sends it on to its manager thread. Before
/// that registration (which happens asynchronously, after `resume`) a signal sent to the process
/// had nowhere to go: with the disposition `SIG_IGN` the kernel discarded it, with the default
/// action it ended the process. So the runtime installs a forwarding handler of its own at
/// creation (C: `ld_signal_forward`): the catching thread blocks the signal and sends it to the
/// process again, where it stays pending until libdispatch's signalfd reads it. A handler that
/// is already installed (libdispatch's, or the host's) is left alone.
///
/// A consequence, as with libdispatch's own handler: once a signal has been watched it never
/// has its default action again in this process, and the threads that caught it keep it blocked.
enum SignalHub {
    /// Called when a signal source is created, before libdispatch can register it.
    static func prepare(_ signal: Int32) -> Int32? {
        let e = ld_signal_forward(signal)
        return e == 0 ? nil : e
    }
}
