// Filled in by the ingest benchmark work.
struct IngestBenchmark {
    let runtime: Runtime
    func run() async throws -> Int32 { throw UsageError("bench ingest is not available yet") }
}
