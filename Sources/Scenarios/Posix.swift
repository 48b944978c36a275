import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// The few file-system and process facts the scenario runner needs, straight from POSIX (the CLI
/// links no Foundation: it would cost milliseconds at every start).
enum Posix {
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Every `NAME=value` of this process's environment.
    static func environ() -> [String] {
        var result: [String] = []
        var p = Glibc.environ
        while let entry = p.pointee {
            result.append(String(cString: entry))
            p += 1
        }
        return result
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// The canonical absolute path (symbolic links, `.` and `..` resolved), if it exists.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func currentDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "." }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    /// This binary's path, for re-running it as a child.
    static func executablePath() -> String {
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        return n > 0 ? String(decoding: buf[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }

    /// The names in a directory (without `.` and `..`), or nil if it cannot be read.
    static func directoryEntries(_ path: String) -> [String]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A regular file's bytes (at most `limit`), or nil if it cannot be read.
    static func readFile(_ path: String, limit: Int = Int.max) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while bytes.count < limit {
            let n = read(fd, &buf, min(buf.count, limit - bytes.count))
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes += buf[..<n]
        }
        return bytes
    }

    /// Writes all of `bytes` to `fd`, retrying short writes.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    static func writeStandardError(_ text: String) {
        fflush(nil)
        writeAll(2, Array(text.utf8))
    }

    /// Removes `path` and everything under it, without following symbolic links.
    static func removeTree(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            for name in directoryEntries(path) ?? [] { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }

    /// A new private directory under `$TMPDIR` (or /tmp).
    static func makeTemporaryDirectory(prefix: String) throws(ScenarioError) -> String {
        var tmp = environment("TMPDIR").flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        if !tmp.hasSuffix("/") { tmp += "/" }
        var template = Array("\(tmp)\(prefix)XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ScenarioError("mkdtemp: " + errorText()) }
        return String(cString: made)
    }

    static func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    /// Seconds on a monotonic clock.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// `value` with two decimals, as `%.2f` prints it.
    static func twoDecimals(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
    }
}

struct ScenarioError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
