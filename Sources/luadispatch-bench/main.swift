BenchMain.run(CommandLine.arguments)
