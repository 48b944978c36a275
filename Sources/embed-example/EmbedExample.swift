import Dispatch
import Foundation
import LuaDispatch

/// A Swift tool that embeds LuaDispatch: it exposes a host module with a function, a value and
/// one of its own queues, runs a user script (the file named on the command line, or a built-in
/// one), services the main queue until the script's work is done, then calls back into Lua.
enum EmbedExample {
    /// The host's own queue, shared with Lua: host and script submit to it in one FIFO order.
    static let indexQueue = DispatchQueue(label: "example.index")

    static let defaultScript = """
        local dispatch = require("dispatch")
        local host = require("host")

        local texts = {
          "the quick brown fox jumps over the lazy dog",
          "grand central dispatch runs blocks on queues",
          "lua scripts drive the real dispatch underneath",
        }
        local counts = {}
        local group = dispatch.group()
        local workers = dispatch.queue{label = "example.workers", concurrent = true}

        for i, text in ipairs(texts) do
          workers:async(function()
            local n = host.word_count(text)            -- a Swift function
            host.index:async(function()                -- the host's queue
              counts[#counts + 1] = n
              host.log(("text %d has %d words"):format(i, n))
            end)
          end, {group = group})
        end

        group:notify(dispatch.main, function()
          host.index:sync(function() end)              -- let the index queue catch up
          host.log(("all %d texts counted on the main thread: %s"):format(#counts, tostring(dispatch.thread().is_main)))
        end)

        -- Called by the host after the work is done.
        function summary()
          local total = 0
          for _, n in ipairs(counts) do total = total + n end
          return {texts = #counts, words = total, host = host.name}
        end
        """

    static func main() {
        let runtime = Runtime()
        runtime.register(
            module: "host",
            functions: [
                "word_count": { args in
                    guard let text = args.first?.stringValue else { throw ExampleError("word_count: string expected") }
                    return [.integer(text.split(whereSeparator: \.isWhitespace).count)]
                },
                "log": { args in
                    print("[host] " + args.map { $0.stringValue ?? $0.description }.joined(separator: " "))
                    return []
                },
            ],
            values: ["name": "embed-example"],
            queues: ["index": SharedQueue(indexQueue)]
        )
        runtime.uncaughtErrorHandler = { error in
            FileHandle.standardError.write(Data("[host] script error: \(error)\n".utf8))
        }
        do {
            if let path = CommandLine.arguments.dropFirst().first {
                try runtime.run(file: path)
            } else {
                try runtime.run(string: defaultScript, name: "=example")
            }
            runtime.runUntilIdle()
            let summary = try runtime.call("summary")
            print("[host] summary from Lua: \(summary.first ?? .nil)")
        } catch {
            FileHandle.standardError.write(Data("[host] \(error)\n".utf8))
            runtime.close()
            exit(1)
        }
        let status = runtime.exitStatus
        runtime.close()
        exit(status)
    }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
