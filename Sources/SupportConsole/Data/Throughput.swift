import Foundation
import Postgres

/// Jobs finished per time bucket and outcome over a window, for the overview's charts.
public struct ThroughputBucket: Sendable {
    public let start: Date
    public let outcome: String
    public let finished: Int
    /// Finished jobs that needed more than one attempt: Apple erred or timed out on them first.
    public let retried: Int
}

public struct ThroughputWindow: Sendable {
    public let seconds: Double
    public let bucketSeconds: Double
    public let buckets: [ThroughputBucket]

    public var finished: Int { buckets.reduce(0) { $0 + $1.finished } }
    public var retried: Int { buckets.reduce(0) { $0 + $1.retried } }

    public var byOutcome: [(outcome: String, count: Int)] {
        Dictionary(grouping: buckets, by: \.outcome).map { ($0.key, $0.value.reduce(0) { $0 + $1.finished }) }
            .sorted { $0.count != $1.count ? $0.count > $1.count : $0.outcome < $1.outcome }
    }

    /// Finished jobs per bucket, oldest first, one entry per bucket of the window (gaps are 0).
    public func series(now: Date) -> [Int] {
        let count = Int((seconds / bucketSeconds).rounded())
        let firstStart = (now.timeIntervalSince1970 / bucketSeconds).rounded(.down) * bucketSeconds - Double(count - 1) * bucketSeconds
        var values = [Int](repeating: 0, count: count)
        for bucket in buckets {
            let index = Int(((bucket.start.timeIntervalSince1970 - firstStart) / bucketSeconds).rounded())
            if values.indices.contains(index) { values[index] += bucket.finished }
        }
        return values
    }
}

struct ThroughputStore: Sendable {
    let client: PostgresClient

    /// One branch per finished state, each on its own partial index (jobs_done, jobs_failed on
    /// finished_at; jobs_attention, few rows), the way QueueStatistics counts states.
    static let windowSQL = """
        SELECT date_trunc($2, finished_at) AS bucket, outcome, count(*)::bigint, count(*) FILTER (WHERE attempts > 1)::bigint
        FROM (
            SELECT finished_at, outcome, attempts FROM iap.jobs WHERE state = 'done' AND finished_at >= now() - make_interval(secs => $1)
            UNION ALL
            SELECT finished_at, outcome, attempts FROM iap.jobs WHERE state = 'failed' AND finished_at >= now() - make_interval(secs => $1)
            UNION ALL
            SELECT finished_at, outcome, attempts FROM iap.jobs WHERE state = 'attention' AND finished_at >= now() - make_interval(secs => $1)
        ) AS finished
        GROUP BY 1, 2 ORDER BY 1
        """

    /// `bucket` is "minute" or "hour".
    func window(seconds: Double, bucket: String) async throws -> ThroughputWindow {
        let rows = try await client.query(Self.windowSQL, [seconds, bucket]).map { row in
            ThroughputBucket(start: try row.decode(at: 0), outcome: try row.decode(String?.self, at: 1) ?? "none",
                             finished: try row.decode(at: 2), retried: try row.decode(at: 3))
        }
        return ThroughputWindow(seconds: seconds, bucketSeconds: bucket == "hour" ? 3600 : 60, buckets: rows)
    }
}
