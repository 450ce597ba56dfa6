import Postgres
import TestSupport
@testable import Workloads
import XCTest

/// `bench ingest --wrk`'s `checkpoint_buffers_written`: the buffers a checkpoint wrote during a run.
final class CheckpointWritesTests: XCTestCase {
    func testACheckpointDuringTheRunIsCountedAndNoneIsNothing() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 1, applicationName: "checkpoint-test")
        defer { Task { await client.close() } }
        let writes = CheckpointWrites(client: client)
        _ = try await client.query("CREATE TABLE dirtied AS SELECT n FROM generate_series(1, 20000) AS n")
        let (_, during) = try await writes.during { try await client.query("CHECKPOINT") }
        XCTAssertGreaterThan(try XCTUnwrap(during), 0, "the checkpoint wrote the new table's pages")
        let (_, quiet) = try await writes.during { try await client.query("SELECT 1") }
        XCTAssertEqual(quiet, 0)
    }
}
