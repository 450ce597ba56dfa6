import Foundation

// A log stream whose reader went away (a pipe to a log shipper that died) answers EPIPE, which
// the log sink ignores; SIGPIPE's default action would end the process instead.
signal(SIGPIPE, SIG_IGN)
MemoryTuning.apply(environment: ProcessInfo.processInfo.environment) // before any thread starts
OpenFileLimit.raiseToHardLimit()
let code = await CommandLineApp.main(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code)
