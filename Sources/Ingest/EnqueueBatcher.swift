import Postgres
import Synchronization

/// One job to enqueue, in `iap.jobs` terms.
struct JobInsert: Sendable {
    let kind: IngestJobKind
    let userID: String?
    let orderID: String?
    let productID: String?
    let payload: String
}

/// Group commit for the API: submissions that arrive while a write is in flight wait for the
/// next one and go to the database together, as one `iap.enqueue_jobs` statement (one
/// transaction). No timer: a lone request is written at once; under load each write carries
/// whatever queued meanwhile. Every caller still returns only after its own row committed.
final class EnqueueBatcher: Sendable {
    private struct Waiting {
        let job: JobInsert
        let continuation: CheckedContinuation<EnqueueResult, any Error>
    }
    private struct State {
        var waiting: [Waiting] = []
        var writers = 0
    }

    static let enqueueSQL = """
        SELECT ordinal, job_id, created FROM iap.enqueue_jobs($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
        """

    private let client: PostgresClient
    /// Writes in flight at once; more would only add commits, fewer would leave the pool idle.
    private let maxWriters: Int
    private let maxJobsPerWrite: Int
    private let maxBytesPerWrite: Int
    private let state = Mutex(State())

    init(client: PostgresClient, maxWriters: Int = 2, maxJobsPerWrite: Int = 256, maxBytesPerWrite: Int = 8 << 20) {
        self.client = client
        self.maxWriters = max(1, maxWriters)
        self.maxJobsPerWrite = max(1, maxJobsPerWrite)
        self.maxBytesPerWrite = maxBytesPerWrite
    }

    /// Returns once the job (or the job it duplicates) is committed.
    func enqueue(_ job: JobInsert) async throws -> EnqueueResult {
        try await withCheckedThrowingContinuation { continuation in
            let startWriter = state.withLock { state -> Bool in
                state.waiting.append(Waiting(job: job, continuation: continuation))
                guard state.writers < maxWriters else { return false }
                state.writers += 1
                return true
            }
            if startWriter { Task { await self.writeUntilEmpty() } }
        }
    }

    private func writeUntilEmpty() async {
        while let batch = takeBatch() {
            await write(batch)
        }
    }

    /// The oldest waiting jobs up to the limits, or nil (and one writer fewer) when none wait.
    private func takeBatch() -> [Waiting]? {
        state.withLock { state -> [Waiting]? in
            guard !state.waiting.isEmpty else {
                state.writers -= 1
                return nil
            }
            var count = 0, bytes = 0
            for waiting in state.waiting {
                bytes += waiting.job.payload.utf8.count
                if count > 0 && (count == maxJobsPerWrite || bytes > maxBytesPerWrite) { break }
                count += 1
            }
            defer { state.waiting.removeFirst(count) }
            return Array(state.waiting.prefix(count))
        }
    }

    private func write(_ batch: [Waiting]) async {
        do {
            let results = try await insert(batch.map(\.job))
            for (waiting, result) in zip(batch, results) { waiting.continuation.resume(returning: result) }
        } catch let error as PostgresError where !error.isConnectionLost && batch.count > 1 {
            // A row the database refuses must fail alone: write the batch one job at a time.
            for waiting in batch {
                do {
                    waiting.continuation.resume(returning: try await insert([waiting.job])[0])
                } catch {
                    waiting.continuation.resume(throwing: error)
                }
            }
        } catch {
            for waiting in batch { waiting.continuation.resume(throwing: error) }
        }
    }

    /// One statement for `jobs`, results in the same order. Safe to repeat after a lost
    /// connection (the client retries once): enqueue is idempotent.
    private func insert(_ jobs: [JobInsert]) async throws -> [EnqueueResult] {
        let rows = try await client.query(Self.enqueueSQL, [
            jobs.map(\.kind.rawValue), jobs.map(\.userID), jobs.map(\.orderID), jobs.map(\.productID), jobs.map(\.payload),
        ])
        var results = [EnqueueResult?](repeating: nil, count: jobs.count)
        for row in rows {
            let ordinal = try row.decode(Int.self, at: 0)
            guard (1...jobs.count).contains(ordinal) else { continue }
            results[ordinal - 1] = EnqueueResult(jobID: try row.decode(Int64.self, at: 1), created: try row.decode(Bool.self, at: 2))
        }
        guard results.allSatisfy({ $0 != nil }) else {
            throw PostgresError(kind: .client, message: "enqueue returned \(rows.count) rows for \(jobs.count) jobs")
        }
        return results.map { $0! }
    }
}
