/// What `luadispatch --help` prints, and the usage after a bad option: lua's usage lines as lua
/// prints them (so that lua's format holds), then what `luadispatch` adds.
enum Help {
    static func text(_ program: String) -> String {
        """
        usage: \(program) [options] [script [args]]
        Available options are:
          -e stat   execute string 'stat'
          -i        enter interactive mode after executing 'script'
          -l mod    require library 'mod' into global 'mod'
          -l g=mod  require library 'mod' into global 'g'
          -v        show version information
          -E        ignore environment variables
          -W        turn warnings on
          --        stop handling options
          -         stop handling options and execute stdin
        Options of luadispatch (before the script):
          --trace FILE          write the run's execution timeline to FILE (Chrome trace JSON)
          --sandbox             run an untrusted script: no files, processes, network or C modules
          --memory-limit SIZE   cap the memory of every Lua state of the run (bytes, or 64K, 64M, 1G)
          --time-limit SECONDS  end the whole run after SECONDS, with status 1
          --help                show this help
        Commands:
          \(program) run script [args]                the same as '\(program) script [args]'
          \(program) scenarios list [--dir D]         list the bundled scenarios
          \(program) scenarios run ID... | --all      run scenarios, each in a process of its own
          \(program) scenarios exec FILE              run one scenario script in this process
          \(program) trace view TRACE.json [-o FILE]  draw a recorded trace as an HTML page or SVG
        ('\(program) scenarios --help' lists the scenarios' options.)

        """
    }
}
