import Foundation
import Observability
import SupportConsole

/// `console add-user | set-password | set-role | disable-user | enable-user | list-users`: who may
/// use the console. Adding never changes an existing user; each change has its own command.
enum ConsoleUserCommands {
    static let actions = ["add-user", "set-password", "set-role", "disable-user", "enable-user", "list-users"]

    static func run(_ action: String, _ runtime: Runtime) async throws -> Int32 {
        let options = runtime.options
        let name = options.positionals.count == 2 ? options.positionals[1] : nil
        if action != "list-users", name == nil { throw UsageError("console \(action) needs a NAME") }
        // Read before connecting, so a usage mistake is reported without a database.
        let role = try (action == "add-user" || action == "set-role") ? requiredRole(action, options) : nil
        let password = (action == "add-user" || action == "set-password") ? readPassword() : nil
        let client = try await runtime.connectDatabase(maxConnections: 1, applicationName: "receipt-worker-console")
        let users = ConsoleUsers(client: client)
        do {
            switch action {
            case "add-user": try await users.add(name: name!, role: role!, password: password!)
            case "set-password": try await users.setPassword(name: name!, password: password!)
            case "set-role": try await users.setRole(name: name!, role: role!)
            case "disable-user": try await users.disable(name: name!)
            case "enable-user": try await users.enable(name: name!)
            default: Console.print(table(try await users.list()))
            }
        } catch {
            await client.close()
            throw (error as? ConsoleUserError).map { UsageError("console \(action): \($0)") } ?? error
        }
        await client.close()
        if let name { Console.print(done(action, name, role)) }
        return 0
    }

    private static func requiredRole(_ action: String, _ options: CommandLineOptions) throws -> ConsoleRole {
        guard let role = options.flag("role").flatMap(ConsoleRole.init(rawValue:)) else {
            throw UsageError("console \(action) needs --role viewer or --role support")
        }
        return role
    }

    private static func readPassword() -> String {
        String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .newlines)
    }

    private static func done(_ action: String, _ name: String, _ role: ConsoleRole?) -> String {
        switch action {
        case "add-user": "console user \(name) (\(role!.rawValue)) added"
        case "set-password": "console user \(name): password changed, their sessions ended"
        case "set-role": "console user \(name) is now \(role!.rawValue)"
        case "disable-user": "console user \(name) disabled, their sessions ended"
        default: "console user \(name) enabled"
        }
    }

    private static func table(_ users: [ConsoleUserRecord]) -> String {
        guard !users.isEmpty else { return "no console users" }
        return TextTable.render(header: ["name", "role", "password", "created", "disabled"], rows: users.map { user in
            [user.name, user.role, user.hasPassword ? "yes" : "no (SSO)", Console.timestamp(user.createdAt),
             user.disabledAt.map(Console.timestamp) ?? "-"]
        })
    }
}
