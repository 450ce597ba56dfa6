// Filled in by the soak work.
struct SoakBenchmark {
    let runtime: Runtime
    func run() async throws -> Int32 { throw UsageError("bench soak is not available yet") }
}
