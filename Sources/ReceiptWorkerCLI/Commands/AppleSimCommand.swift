// Filled in by the apple-sim wiring work.
enum AppleSimCommand {
    static let spec = CommandSpec(name: "apple-sim", summary: "A local stand-in for Apple's servers (not wired yet).", usage: "apple-sim")
    static func run(_ runtime: Runtime) async throws -> Int32 { throw UsageError("apple-sim is not wired yet") }
}
