import Foundation

MemoryTuning.apply(environment: ProcessInfo.processInfo.environment) // before any thread starts
let code = await CommandLineApp.main(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code)
