import Observability
import Foundation

/// Dispatches `receipt-worker <command> …` and turns errors into exit codes:
/// 2 for bad usage or configuration (one line on stderr), 1 for failures at run time.
enum CommandLineApp {
    struct Command: Sendable {
        let spec: CommandSpec
        let run: @Sendable (Runtime) async throws -> Int32
    }

    static let commands: [Command] = [
        Command(spec: MigrateCommand.spec, run: MigrateCommand.run),
        Command(spec: IngestCommand.spec, run: IngestCommand.run),
        Command(spec: StatusCommand.spec, run: StatusCommand.run),
        Command(spec: WorkCommand.spec, run: WorkCommand.run),
        Command(spec: AlertsCommand.spec, run: AlertsCommand.run),
        Command(spec: InspectCommand.spec, run: InspectCommand.run),
        Command(spec: DemoCommand.spec, run: DemoCommand.run),
        Command(spec: AppleSimCommand.spec, run: AppleSimCommand.run),
        Command(spec: BenchCommand.spec, run: BenchCommand.run),
        Command(spec: ConsoleCommand.spec, run: ConsoleCommand.run),
        Command(spec: NotificationsCommand.spec, run: NotificationsCommand.run),
        Command(spec: SupportCommand.spec, run: SupportCommand.run),
        Command(spec: ReconcileCommand.spec, run: ReconcileCommand.run),
    ]

    static func main(_ arguments: [String], environment: [String: String]) async -> Int32 {
        guard let name = arguments.first, !["--help", "-h", "help"].contains(name) else {
            Console.print(overview())
            return arguments.isEmpty ? 2 : 0
        }
        guard let command = commands.first(where: { $0.spec.name == name }) else {
            return fail(UsageError("unknown command '\(name)' (commands: \(commands.map(\.spec.name).joined(separator: ", ")))"))
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            Console.print(command.spec.helpText())
            return 0
        }
        do {
            let options = try CommandLineOptions(rest, spec: command.spec, environment: environment)
            return try await command.run(Runtime(options: options, environment: environment))
        } catch {
            return fail(error)
        }
    }

    static func fail(_ error: Error) -> Int32 {
        let code: Int32 = error is UsageError ? 2 : 1
        FileHandle.standardError.write(Data("receipt-worker: \(error)\n".utf8))
        return code
    }

    static func overview() -> String {
        var lines = ["usage: receipt-worker <command> [--flag value]...", "", "commands:"]
        let width = max(12, (commands.map(\.spec.name.count).max() ?? 0) + 2)
        for command in commands {
            lines.append("  " + command.spec.name.padding(toLength: width, withPad: " ", startingAt: 0) + command.spec.summary)
        }
        lines += ["", "receipt-worker <command> --help lists a command's flags and environment variables."]
        return lines.joined(separator: "\n")
    }
}
