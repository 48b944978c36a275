import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Looks at a directory at intervals (a Dispatch timer on a queue of its own) and reports what
/// changed since the last look: files created, modified (size or modification time) or
/// deleted, among those whose names match the patterns.
final class Watcher: @unchecked Sendable {
    private struct Stamp: Equatable {
        var size: Int
        var modified: Date
    }

    private let root: URL
    private let patterns: [String]
    private let queue = DispatchQueue(label: "embed-example.watcher")
    private var timer: DispatchSourceTimer?
    /// The last look; only touched on `queue`.
    private var seen: [String: Stamp] = [:]

    init(root: URL, patterns: [String]) {
        self.root = root
        self.patterns = patterns
    }

    /// Looks once now (everything counts as created), then every `interval` seconds; `report`
    /// runs on the watcher's queue with each look's changes and the sizes of all files.
    func start(every interval: Double, report: @escaping @Sendable ([Change], [String: Int]) -> Void) {
        queue.sync { look(report) }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [unowned self] in look(report) }
        timer.resume()
        self.timer = timer
    }

    func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
        }
    }

    private func look(_ report: ([Change], [String: Int]) -> Void) {
        let now = scan()
        var changes: [Change] = []
        for (name, stamp) in now.sorted(by: { $0.key < $1.key }) {
            if let old = seen[name] {
                if old != stamp { changes.append(Change(kind: .modified, file: name, size: stamp.size)) }
            } else {
                changes.append(Change(kind: .created, file: name, size: stamp.size))
            }
        }
        for name in seen.keys.sorted() where now[name] == nil {
            changes.append(Change(kind: .deleted, file: name, size: nil))
        }
        seen = now
        report(changes, now.mapValues(\.size))
    }

    private func scan() -> [String: Stamp] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        var result: [String: Stamp] = [:]
        for name in names where matches(name) {
            guard let a = try? FileManager.default.attributesOfItem(atPath: root.appendingPathComponent(name).path),
                  (a[.type] as? FileAttributeType) == .typeRegular else { continue }
            result[name] = Stamp(size: (a[.size] as? Int) ?? 0, modified: (a[.modificationDate] as? Date) ?? .distantPast)
        }
        return result
    }

    private func matches(_ name: String) -> Bool {
        patterns.isEmpty || patterns.contains { fnmatch($0, name, 0) == 0 }
    }
}
