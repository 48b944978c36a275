import Dispatch

// Runs every example of docs/embedding.md; EmbedDocsTests compares the output. Synchronous
// top-level code, on the main thread outside any main-queue block (as a command-line host
// is), so that `hostLoop` can service the main queue itself.
try quickStart()
try hostFunctions()
let double = try callbacks()
let finished = DispatchSemaphore(value: 0)
Task.detached {
    do { try await asyncCalls(double) } catch { print(error) }
    finished.signal()
}
finished.wait()
try objects()
try asyncFunctions()
try liveTables()
try configuration()
try conversions()
try multipleValues()
try hostLoop()
