import Dispatch
import Postgres

/// `receipt-worker ingest --file PATH|-`: loads NDJSON lines shaped like `POST /v1/receipts` bodies.
///
/// A reader thread streams and validates the input (one JSON parse per line, no SQL); each batch of
/// good lines is then one transaction: COPY into a temporary staging table, one
/// `INSERT … SELECT … ON CONFLICT (dedup_key) DO NOTHING` into `iap.job_requests` (and `iap.job_queue`) with the same dedup key as
/// `iap.enqueue_receipt`, and one NOTIFY. Job ids follow file order within a batch, not across
/// batches that ran in parallel. So a re-run of the same file — or a line already sent over
/// HTTP — creates nothing new, and a crash mid-file loses no committed batch.
public struct BulkLoader: Sendable {
    static let createStagingSQL = """
        CREATE TEMP TABLE ingest_staging (user_id text NOT NULL, order_id text, product_id text, payload text NOT NULL) \
        ON COMMIT DROP
        """
    static let copyStagingSQL = "COPY ingest_staging (user_id, order_id, product_id, payload) FROM STDIN"
    /// The requests first (the unique dedup_key skips lines already enqueued), then a queue row
    /// for each new one (migration 0024) and its ready row (migration 0039). Ids are drawn in
    /// staging order. Its row count is the jobs created.
    static let insertJobsSQL = """
        WITH requests AS (
            INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key)
            SELECT nextval('iap.jobs_id_seq'), 'receipt', user_id, order_id, product_id, payload,
                   iap.job_dedup_key('receipt', user_id, order_id, payload)
            FROM ingest_staging
            ON CONFLICT (dedup_key) DO NOTHING
            RETURNING id, kind
        ), queued AS (
            INSERT INTO iap.job_queue (id, kind) SELECT id, kind FROM requests RETURNING id, state, run_at
        )
        INSERT INTO iap.job_ready (id, state, run_at) SELECT id, state, run_at FROM queued
        """
    static let notifySQL = "SELECT pg_notify('iap_jobs', '')"

    public let client: PostgresClient
    public let options: BulkLoadOptions

    public init(client: PostgresClient, options: BulkLoadOptions = BulkLoadOptions()) {
        self.client = client
        self.options = options
    }

    /// Loads every good line of `source`. `onRejected` gets each bad line (number and reason) as it
    /// is found; `onProgress` is called every `progressInterval` and once more at the end. The two
    /// never run at the same time. Throws on an unreadable source or a database failure; batches
    /// committed before the failure stay (re-running the file is safe).
    public func load(_ source: BulkLoadSource,
                     onRejected: @escaping @Sendable (RejectedLine) -> Void = { _ in },
                     onProgress: @escaping @Sendable (BulkLoadStats) -> Void = { _ in }) async throws -> BulkLoadStats {
        let clock = ContinuousClock()
        let started = clock.now
        let counters = BulkLoadCounters()
        let reporter = BulkLoadReporter(onRejected: onRejected, onProgress: onProgress)
        let slots = DispatchSemaphore(value: options.parallelBatches + 1)
        let batches = BulkLoadReader(source: source, options: options, counters: counters,
                                     reporter: reporter, slots: slots).start()
        let interval = options.progressInterval
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                reporter.progress(counters.snapshot(elapsed: clock.now - started))
            }
        }
        defer { ticker.cancel() }

        do {
            // Up to `parallelBatches` transactions at once, each on its own pooled connection:
            // the INSERT (index upkeep, dedup hashing) is the bottleneck, and it scales with server cores.
            try await withThrowingTaskGroup(of: (rows: Int, inserted: Int).self) { group in
                var running = 0
                func record(_ done: (rows: Int, inserted: Int)) {
                    counters.update {
                        $0.loaded += done.inserted
                        $0.duplicates += done.rows - done.inserted
                    }
                    slots.signal()
                    running -= 1
                }
                for try await batch in batches {
                    if running >= options.parallelBatches, let done = try await group.next() { record(done) }
                    running += 1
                    group.addTask {
                        try await client.withConnection { (batch.rows, try await insert(batch, on: $0)) }
                    }
                }
                while let done = try await group.next() { record(done) }
            }
        } catch {
            counters.stop()
            slots.signal()
            throw error
        }
        ticker.cancel()
        let summary = counters.snapshot(elapsed: clock.now - started)
        reporter.progress(summary)
        return summary
    }

    /// One batch, one transaction. Retried on a lost connection, and on a deadlock, which two
    /// concurrent batches holding the same lines in crossed order can cause. Retrying is harmless:
    /// the failed attempt rolled back (or committed, and its rows now count as duplicates).
    private func insert(_ batch: ReceiptBatch, on connection: PostgresConnection) async throws -> Int {
        var attempt = 1
        while true {
            do {
                return try await insertOnce(batch, on: connection)
            } catch let error as PostgresError where (error.isConnectionLost || error.isSerializationFailure) && attempt < 3 {
                attempt += 1
            }
        }
    }

    private func insertOnce(_ batch: ReceiptBatch, on connection: PostgresConnection) async throws -> Int {
        try await connection.transaction { connection in
            _ = try await connection.query(Self.createStagingSQL)
            try await connection.copyIn(Self.copyStagingSQL, data: batch.copyData)
            let inserted = try await connection.query(Self.insertJobsSQL).affectedRows
            if inserted > 0 { _ = try await connection.query(Self.notifySQL) }
            return inserted
        }
    }
}
