// Filled in by the ingest wiring work.
enum IngestCommand {
    static let spec = CommandSpec(name: "ingest", summary: "The ingest process (not wired yet).", usage: "ingest")
    static func run(_ runtime: Runtime) async throws -> Int32 { throw UsageError("ingest is not wired yet") }
}
