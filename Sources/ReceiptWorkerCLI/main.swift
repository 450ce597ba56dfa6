import Foundation

let code = await CommandLineApp.main(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code)
