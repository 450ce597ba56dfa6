import Foundation
@testable import Ingest
import Postgres
import Synchronization
import TestSupport
import XCTest

final class BulkLoaderTests: XCTestCase {
    private func temporaryFile(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-\(UUID().uuidString).ndjson")
        try Data(text.utf8).write(to: url)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }

    /// Runs a load, collecting rejections and progress reports.
    private func load(_ loader: BulkLoader, _ source: BulkLoadSource) async throws
        -> (summary: BulkLoadStats, rejected: [RejectedLine], progress: [BulkLoadStats]) {
        let rejected = Mutex<[RejectedLine]>([])
        let progress = Mutex<[BulkLoadStats]>([])
        let summary = try await loader.load(source,
                                            onRejected: { line in rejected.withLock { $0.append(line) } },
                                            onProgress: { stats in progress.withLock { $0.append(stats) } })
        return (summary, rejected.withLock { $0 }, progress.withLock { $0 })
    }

    func testTwentyThousandLinesWithBadOnesLoadIdempotently() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 2)
        var lines: [String] = []
        var expectedRejections: [RejectedLine] = []
        var goodLines = 0
        for index in 0..<20_000 {
            let number = index + 1
            let receipt = sampleReceipt(index)
            switch index {
            case _ where index % 997 == 5:
                lines.append(#"{"user_id":"u\#(index)","receipt_data":"\#(receipt)""#)  // truncated JSON
                expectedRejections.append(RejectedLine(lineNumber: number, reason: "malformed JSON: unexpected end of input"))
            case _ where index % 1_999 == 7:
                lines.append(#"{"order_id":"o\#(index)","receipt_data":"\#(receipt)"}"#)
                expectedRejections.append(RejectedLine(lineNumber: number, reason: "user_id is required"))
            case _ where index % 2_503 == 11:
                lines.append(#"{"user_id":"u\#(index)","receipt_data":"!!!\#(index)"}"#)
                expectedRejections.append(RejectedLine(lineNumber: number, reason: "receipt_data must be base64"))
            case _ where index % 3_001 == 13:
                lines.append(#"{"user_id":\#(index),"receipt_data":"\#(receipt)"}"#)
                expectedRejections.append(RejectedLine(lineNumber: number, reason: "user_id must be a string"))
            case _ where index % 4_001 == 17:
                lines.append("   ")  // blank: skipped, not rejected
            default:
                lines.append(#"{"user_id":"u\#(index)","order_id":"o\#(index)","product_id":"gems","receipt_data":"\#(receipt)"}"#)
                goodLines += 1
            }
        }
        let path = try temporaryFile(lines.joined(separator: "\n") + "\n")
        let loader = BulkLoader(client: client, options: BulkLoadOptions(batchSize: 5_000, progressInterval: .milliseconds(20)))

        let first = try await load(loader, .path(path))
        XCTAssertEqual(first.rejected, expectedRejections)
        XCTAssertEqual(first.summary.linesRead, 20_000)
        XCTAssertEqual(first.summary.loaded, goodLines)
        XCTAssertEqual(first.summary.duplicates, 0)
        XCTAssertEqual(first.summary.rejected, expectedRejections.count)
        XCTAssertEqual(first.summary.blankLines, 20_000 - goodLines - expectedRejections.count)
        XCTAssertEqual(first.progress.last, first.summary, "the last progress report carries the final numbers")
        let jobs = try await client.query("SELECT count(*) AS n, count(*) FILTER (WHERE kind = 'receipt' AND state = 'queued') AS q FROM iap.jobs").first
        XCTAssertEqual(try jobs?.decode(Int.self, "n"), goodLines)
        XCTAssertEqual(try jobs?.decode(Int.self, "q"), goodLines)
        let ready = try await client.query("SELECT count(*) FROM iap.job_ready").first?.decode(Int.self, at: 0)
        XCTAssertEqual(ready, goodLines, "every loaded job is claimable: the load writes its ready row")

        // The loaded rows are exactly what iap.enqueue_receipt would have made (same dedup key).
        let sameKey = try await client.query("""
            SELECT count(*) FROM iap.jobs WHERE dedup_key = iap.job_dedup_key('receipt', user_id, order_id, payload)
            AND product_id = 'gems' AND user_id = 'u' || substr(order_id, 2)
            """).first?.decode(Int.self, at: 0)
        XCTAssertEqual(sameKey, goodLines)

        let again = try await load(loader, .path(path))
        XCTAssertEqual(again.summary.loaded, 0)
        XCTAssertEqual(again.summary.duplicates, goodLines)
        XCTAssertEqual(again.rejected, expectedRejections)
        let jobsAfter = try await client.query("SELECT count(*) FROM iap.jobs").first?.decode(Int.self, at: 0)
        XCTAssertEqual(jobsAfter, goodLines)
        await client.close()
    }

    func testEdgeCasesOfTheFileFormat() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 2)
        // Already enqueued over the API path: the bulk line for it is a duplicate, not a second job.
        let store = JobStore(client: client)
        let existing = try await store.enqueue(ReceiptSubmission(userID: "ユーザー", orderID: "o1", receiptData: sampleReceipt(1)))
        XCTAssertTrue(existing.created)

        let text = "\u{FEFF}" + #"{"user_id":"ユーザー","order_id":"o1","receipt_data":"\#(sampleReceipt(1))"}"# + "\r\n"  // BOM, CRLF
            + "\n"
            + #"{"user_id":"😀 gamer","order_id":null,"receipt_data":"\#(sampleReceipt(2))"}"# + "\n"
            + #"{"user_id":"😀 gamer","order_id":"","receipt_data":"\#(sampleReceipt(2))"}"# + "\n"  // same job as above
            + #"{"user_id":"tab\there","receipt_data":"QUJD\r\nREVG"}"# + "\n"  // tab in an id survives COPY escaping
            + #"{"user_id":"big","receipt_data":"\#(String(repeating: "QUJD", count: 300))"}"# + "\n"  // over maxLineBytes
            + #"{"user_id":"last","receipt_data":"QUJD"}"#  // no trailing newline
        let path = try temporaryFile(text)
        let loader = BulkLoader(client: client, options: BulkLoadOptions(batchSize: 2, maxLineBytes: 1_000))
        let result = try await load(loader, .path(path))
        XCTAssertEqual(result.rejected, [RejectedLine(lineNumber: 6, reason: "line longer than 1000 bytes")])
        XCTAssertEqual(result.summary.linesRead, 7)
        XCTAssertEqual(result.summary.blankLines, 1)
        XCTAssertEqual(result.summary.loaded, 3)
        XCTAssertEqual(result.summary.duplicates, 2)
        let rows = try await client.query("SELECT user_id, order_id, payload FROM iap.jobs ORDER BY user_id COLLATE \"C\"")
        XCTAssertEqual(try rows.map { try $0.decode(String.self, "user_id") }, ["last", "tab\there", "ユーザー", "😀 gamer"])
        XCTAssertNil(try rows[3].decode(String?.self, "order_id"))
        XCTAssertEqual(try rows[1].decode(String.self, "payload"), "QUJDREVG")
        await client.close()
    }

    func testStreamsFromAFileDescriptor() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 1)
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        // A writer thread trickles lines in, as `cat file | receipt-worker ingest --file -` would.
        Thread {
            for index in 0..<300 {
                let line = Array(#"{"user_id":"p\#(index)","receipt_data":"\#(sampleReceipt(index))"}"#.utf8) + [0x0A]
                line.withUnsafeBytes { _ = write(writeEnd, $0.baseAddress, $0.count) }
            }
            close(writeEnd)
        }.start()
        let result = try await load(BulkLoader(client: client, options: BulkLoadOptions(batchSize: 64)), .fileDescriptor(readEnd))
        close(readEnd)
        XCTAssertEqual(result.summary.loaded, 300)
        XCTAssertEqual(result.rejected, [])
        await client.close()
    }

    func testSourceArgumentAndUnreadableFile() async throws {
        XCTAssertEqual(BulkLoadSource(argument: "-"), .standardInput)
        XCTAssertEqual(BulkLoadSource(argument: "/tmp/x.ndjson"), .path("/tmp/x.ndjson"))
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 1)
        do {
            _ = try await BulkLoader(client: client).load(.path("/nonexistent/receipts.ndjson"))
            XCTFail("expected an error")
        } catch let error as BulkLoadError {
            XCTAssertEqual(error.description, "cannot open /nonexistent/receipts.ndjson: No such file or directory")
        }
        await client.close()
    }

    func testLineSplitterAcrossReadBoundaries() throws {
        let text = "a\nbbbbbbbbbbbb\n\ncc\r\n" + String(repeating: "x", count: 40) + "\nddd"
        let path = try temporaryFile(text)
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var splitter = NDJSONLineSplitter(fileDescriptor: fd, maxLineBytes: 20)
        splitter.chunkSize = 5  // every line straddles reads
        var seen: [String] = []
        try splitter.forEachLine { number, line in
            seen.append("\(number):" + (line.map { String(decoding: $0, as: UTF8.self) } ?? "<too long>"))
            return true
        }
        XCTAssertEqual(seen, ["1:a", "2:bbbbbbbbbbbb", "3:", "4:cc\r", "5:<too long>", "6:ddd"])
    }
}
