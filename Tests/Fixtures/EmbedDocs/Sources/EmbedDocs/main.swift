// Runs every example of docs/embedding.md; EmbedDocsTests compares the output.
try quickStart()
try hostFunctions()
let double = try callbacks()
try await asyncCalls(double)
try objects()
try asyncFunctions()
try liveTables()
try configuration()
