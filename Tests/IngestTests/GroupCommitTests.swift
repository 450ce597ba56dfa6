import Foundation
import Ingest
import Postgres
import TestSupport
import XCTest

/// `JobStore` writes concurrent submissions together (one statement, one transaction per
/// group): each caller still gets its own committed job, duplicates share one, and a row the
/// database refuses fails alone.
final class GroupCommitTests: XCTestCase {
    func testConcurrentSubmissionsEachCommitAndDuplicatesShareOneJob() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 4)
        let store = JobStore(client: client)
        // 300 submissions, 100 distinct: every distinct one three times, all at once.
        let results = try await withThrowingTaskGroup(of: (Int, EnqueueResult).self) { group in
            for index in 0..<300 {
                group.addTask {
                    let n = index % 100
                    let receipt = ReceiptSubmission(userID: "u\(n)", orderID: "o\(n)", productID: "gems", receiptData: "UkVDRUlQVA\(n)")
                    return (n, try await store.enqueue(receipt))
                }
            }
            return try await group.reduce(into: [(Int, EnqueueResult)]()) { $0.append($1) }
        }
        let byReceipt = Dictionary(grouping: results, by: \.0)
        XCTAssertEqual(byReceipt.count, 100)
        for (_, copies) in byReceipt {
            XCTAssertEqual(Set(copies.map(\.1.jobID)).count, 1, "one job per distinct submission")
            XCTAssertEqual(copies.filter(\.1.created).count, 1, "exactly one copy created it")
        }
        let committed = try await client.query("SELECT count(*) FROM iap.jobs")[0].decode(Int.self, at: 0)
        XCTAssertEqual(committed, 100)
        await client.close()
    }

    func testARefusedRowFailsAloneAndTheRestCommit() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 4)
        let store = JobStore(client: client)
        // Validation keeps NUL out of HTTP bodies; here it reaches the database layer on purpose.
        let outcomes = await withTaskGroup(of: (Int, Result<EnqueueResult, any Error>).self) { group in
            for index in 0..<64 {
                group.addTask {
                    let user = index == 17 ? "u\u{0}17" : "u\(index)"
                    let receipt = ReceiptSubmission(userID: user, receiptData: "UkVDRUlQVA\(index)")
                    do { return (index, .success(try await store.enqueue(receipt))) } catch { return (index, .failure(error)) }
                }
            }
            return await group.reduce(into: [Int: Result<EnqueueResult, any Error>]()) { $0[$1.0] = $1.1 }
        }
        for (index, outcome) in outcomes {
            switch outcome {
            case .success: XCTAssertNotEqual(index, 17, "the NUL submission must be refused")
            case .failure(let error):
                XCTAssertEqual(index, 17, "only the NUL submission may fail: \(error)")
                XCTAssertEqual((error as? PostgresError)?.sqlState, "22021")
            }
        }
        let committed = try await client.query("SELECT count(*) FROM iap.jobs")[0].decode(Int.self, at: 0)
        XCTAssertEqual(committed, 63)
        await client.close()
    }

    func testSameDedupRuleAsTheWebTierFunctions() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 2)
        let store = JobStore(client: client)
        let viaSQL = try await client.query("SELECT iap.enqueue_receipt('u1', '', 'UkVDRUlQVA', '')")[0].decode(Int64.self, at: 0)
        let viaStore = try await store.enqueue(ReceiptSubmission(userID: "u1", orderID: "", productID: "", receiptData: "UkVDRUlQVA"))
        XCTAssertEqual(viaStore.jobID, viaSQL)
        XCTAssertFalse(viaStore.created)
        let transaction = try await store.enqueue(TransactionSubmission(userID: "u1", orderID: "o1", signedTransaction: "a.b.c"))
        let transactionViaSQL = try await client.query("SELECT iap.enqueue_transaction('u1', 'o1', 'a.b.c')")[0].decode(Int64.self, at: 0)
        XCTAssertEqual(transaction.jobID, transactionViaSQL)
        let notification = try await store.enqueue(NotificationSubmission(signedPayload: "n.o.p"))
        let notificationViaSQL = try await client.query("SELECT iap.enqueue_notification('n.o.p')")[0].decode(Int64.self, at: 0)
        XCTAssertEqual(notification.jobID, notificationViaSQL)
        // The wrappers still refuse empty arguments.
        do {
            _ = try await client.query("SELECT iap.enqueue_receipt('', 'o', 'UkVDRUlQVA')")
            XCTFail("an empty user_id must be refused")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "22023")
        }
        await client.close()
    }
}
