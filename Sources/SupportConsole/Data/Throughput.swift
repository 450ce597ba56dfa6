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

    /// The start of each bucket `series` returns, oldest first (UTC clock times for the chart's axis).
    public func bucketStarts(now: Date) -> [Date] {
        let count = Int((seconds / bucketSeconds).rounded())
        let firstStart = (now.timeIntervalSince1970 / bucketSeconds).rounded(.down) * bucketSeconds - Double(count - 1) * bucketSeconds
        return (0..<count).map { Date(timeIntervalSince1970: firstStart + Double($0) * bucketSeconds) }
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

package struct ThroughputStore: Sendable {
    let client: PostgresClient

    package init(client: PostgresClient) { self.client = client }

    /// From the log of finished jobs (migration 0028: a row per outcome per completion), not from
    /// the jobs themselves: a day's chart is a day's completion batches, however many jobs they
    /// finished. The window is bound like any value: sessions plan every run for its parameters
    /// (plan_cache_mode), so the planner sees the window's width and reads only its end of the index.
    static let windowSQL = """
        SELECT date_trunc($2, finished_at) AS bucket, outcome, sum(jobs)::bigint, sum(retried)::bigint
        FROM iap.job_finishes
        WHERE finished_at >= now() - $1::interval
        GROUP BY 1, 2 ORDER BY 1
        """

    package func lastHour() async throws -> ThroughputWindow { try await window("1 hour", bucket: "minute", seconds: 3600, bucketSeconds: 60) }
    package func lastDay() async throws -> ThroughputWindow { try await window("1 day", bucket: "hour", seconds: 86_400, bucketSeconds: 3600) }

    private func window(_ width: String, bucket: String, seconds: Double, bucketSeconds: Double) async throws -> ThroughputWindow {
        let rows = try await client.query(Self.windowSQL, [width, bucket]).map { row in
            ThroughputBucket(start: try row.decode(at: 0), outcome: try row.decode(String?.self, at: 1) ?? "none",
                             finished: try row.decode(at: 2), retried: try row.decode(at: 3))
        }
        return ThroughputWindow(seconds: seconds, bucketSeconds: bucketSeconds, buckets: rows)
    }
}
