import Foundation
import HTTP
import Ingest
import Observability
import Postgres
import XCTest

/// The HTTP API over real sockets and a real PostgreSQL.
final class IngestAPITests: XCTestCase {
    func testReceiptEnqueueIsAcknowledgedAfterCommitAndIdempotent() async throws {
        let h = try await IngestHarness()
        let receipt = sampleReceipt(1)
        let body = #"{"user_id":"u1","order_id":"o1","product_id":"gems","receipt_data":"\#(receipt)"}"#
        let first = try await h.enqueue("/v1/receipts", body)
        let again = try await h.enqueue("/v1/receipts", body)
        XCTAssertEqual(first, again)
        // Line breaks are not part of the receipt: same job.
        let wrapped = String(receipt.prefix(4)) + "\\r\\n" + receipt.dropFirst(4)
        let rewrapped = try await h.enqueue("/v1/receipts", #"{"user_id":"u1","order_id":"o1","receipt_data":"\#(wrapped)"}"#)
        XCTAssertEqual(rewrapped, first)
        // Another order or user is another job.
        let otherOrder = try await h.enqueue("/v1/receipts", #"{"user_id":"u1","order_id":"o2","receipt_data":"\#(receipt)"}"#)
        let otherUser = try await h.enqueue("/v1/receipts", #"{"user_id":"u2","order_id":"o1","receipt_data":"\#(receipt)"}"#)
        XCTAssertEqual(Set([first, otherOrder, otherUser]).count, 3)

        // A second connection sees the row at once: the 202 came after COMMIT.
        let rows = try await h.client.query(
            "SELECT kind, user_id, order_id, product_id, payload, state FROM iap.jobs WHERE id = $1", [first])
        let row = try XCTUnwrap(rows.first)
        XCTAssertEqual(try row.decode(String.self, "kind"), "receipt")
        XCTAssertEqual(try row.decode(String.self, "user_id"), "u1")
        XCTAssertEqual(try row.decode(String.self, "order_id"), "o1")
        XCTAssertEqual(try row.decode(String.self, "product_id"), "gems")
        XCTAssertEqual(try row.decode(String.self, "payload"), receipt)
        XCTAssertEqual(try row.decode(String.self, "state"), "queued")
        let jobs = try await h.count("SELECT count(*) FROM iap.jobs")
        XCTAssertEqual(jobs, 3)
        await h.close()
    }

    func testTransactionsAndNotifications() async throws {
        let h = try await IngestHarness()
        let jws = "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln"
        let transaction = try await h.enqueue("/v1/transactions", #"{"user_id":"u1","order_id":null,"signed_transaction":"\#(jws)"}"#)
        let transactionAgain = try await h.enqueue("/v1/transactions", #"{"user_id":"u1","signed_transaction":"\#(jws)"}"#)
        XCTAssertEqual(transaction, transactionAgain)

        // Apple posts without our token; extra fields are ignored.
        let notification = try await h.enqueue("/v1/notifications", #"{"signedPayload":"\#(jws)","version":2}"#, token: nil)
        let redelivered = try await h.enqueue("/v1/notifications", #"{"signedPayload":"\#(jws)"}"#, token: "wrong")
        XCTAssertEqual(notification, redelivered)
        let kinds = try await h.client.query("SELECT id, kind, user_id FROM iap.jobs ORDER BY id")
        XCTAssertEqual(try kinds.map { try $0.decode(String.self, "kind") }, ["signed_transaction", "notification"])
        XCTAssertEqual(try kinds[1].decode(Int64.self, "id"), notification)
        XCTAssertNil(try kinds[1].decode(String?.self, "user_id"))

        for (body, message) in [(#"{"signedPayload":""}"#, "signedPayload must not be empty"),
                                (#"{"signedPayload":1}"#, "signedPayload must be a string"),
                                (#"{"notificationType":"TEST"}"#, "signedPayload is required"),
                                ("not json", "malformed JSON: invalid literal at byte 1"),
                                ("<xml/>", "malformed JSON: unexpected character at byte 1")] {
            let response = try await h.send("POST", "/v1/notifications", body: body, token: nil)
            XCTAssertEqual(response.status, 400, body)
            XCTAssertEqual(response.errorMessage, message, body)
        }
        let jobs = try await h.count("SELECT count(*) FROM iap.jobs")
        XCTAssertEqual(jobs, 2)
        await h.close()
    }

    func testJobPoll() async throws {
        let h = try await IngestHarness()
        let id = try await h.enqueue("/v1/receipts", #"{"user_id":"u1","order_id":"o-7","receipt_data":"\#(sampleReceipt(2))"}"#)
        let queued = try await h.send("GET", "/v1/jobs/\(id)")
        XCTAssertEqual(queued.status, 200)
        XCTAssertEqual(queued.header("content-type"), "application/json")
        XCTAssertEqual(queued.text, #"{"job_id":\#(id),"state":"queued","outcome":null,"order_id":"o-7","transaction_ids":[]}"#)

        _ = try await h.client.query(
            #"UPDATE iap.jobs SET state = 'done', outcome = 'credited', transaction_ids = '{"1000"}' WHERE id = $1"#, [id])
        let done = try await h.send("GET", "/v1/jobs/\(id)")
        XCTAssertEqual(done.text, #"{"job_id":\#(id),"state":"done","outcome":"credited","order_id":"o-7","transaction_ids":["1000"]}"#)

        let missing = try await h.send("GET", "/v1/jobs/\(id + 1000)")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.text, #"{"error":"job not found"}"#)
        for bad in ["abc", "-1", "0", "1.5", "99999999999999999999", "%31x"] {
            let response = try await h.send("GET", "/v1/jobs/\(bad)")
            XCTAssertEqual(response.status, 400, bad)
            XCTAssertEqual(response.errorMessage, "job id must be a positive integer", bad)
        }
        let unauthorized = try await h.send("GET", "/v1/jobs/\(id)", token: nil)
        XCTAssertEqual(unauthorized.status, 401)
        await h.close()
    }

    func testTokenIsRequiredOnV1ExceptNotifications() async throws {
        let h = try await IngestHarness()
        let body = #"{"user_id":"u1","receipt_data":"\#(sampleReceipt(3))"}"#
        for token in [nil, "", "wrong", String(IngestHarness.token.dropLast()), IngestHarness.token + "x"] as [String?] {
            let response = try await h.send("POST", "/v1/receipts", body: body, token: token)
            XCTAssertEqual(response.status, 401, token ?? "none")
            XCTAssertEqual(response.errorMessage, "missing or invalid bearer token")
            XCTAssertEqual(response.header("www-authenticate"), "Bearer")
        }
        let basic = try await h.send("POST", "/v1/transactions", body: body, token: nil,
                                     headers: [("Authorization", "Basic \(IngestHarness.token)")])
        XCTAssertEqual(basic.status, 401)
        // The token is checked before the body: a bad body without a token is a 401, not a 400.
        let unauthenticatedGarbage = try await h.send("POST", "/v1/receipts", body: "{", token: nil)
        XCTAssertEqual(unauthenticatedGarbage.status, 401)
        let jobs = try await h.count("SELECT count(*) FROM iap.jobs")
        XCTAssertEqual(jobs, 0)

        let health = try await h.send("GET", "/healthz", token: nil)
        XCTAssertEqual(health.status, 200)
        XCTAssertEqual(health.text, #"{"status":"ok"}"#)
        // Rejections are logged with the reason, never the token or the body.
        let lines = h.logs.lines
        XCTAssertTrue(lines.contains { $0.contains("event=ingest_rejected") && $0.contains("status=401") && $0.contains("route=/v1/receipts") })
        XCTAssertFalse(lines.contains { $0.contains(IngestHarness.token.dropLast()) }, lines.joined(separator: "\n"))
        XCTAssertFalse(lines.contains { $0.contains(sampleReceipt(3)) })
        await h.close()
    }

    func testBadBodiesGetPreciseMessages() async throws {
        let h = try await IngestHarness()
        let good = sampleReceipt(4)
        let cases: [(String, String, String)] = [
            ("/v1/receipts", "{", "malformed JSON: unexpected end of input"),
            ("/v1/receipts", "[]", "body must be a JSON object"),
            ("/v1/receipts", #"{"user_id":5,"receipt_data":"\#(good)"}"#, "user_id must be a string"),
            ("/v1/receipts", #"{"receipt_data":"\#(good)"}"#, "user_id is required"),
            ("/v1/receipts", #"{"user_id":"","receipt_data":"\#(good)"}"#, "user_id must not be empty"),
            ("/v1/receipts", #"{"user_id":"u","order_id":1,"receipt_data":"\#(good)"}"#, "order_id must be a string"),
            ("/v1/receipts", #"{"user_id":"u"}"#, "receipt_data is required"),
            ("/v1/receipts", #"{"user_id":"u","receipt_data":"not base64!"}"#, "receipt_data must be base64"),
            ("/v1/receipts", #"{"user_id":"\#(String(repeating: "u", count: 300))","receipt_data":"\#(good)"}"#,
             "user_id must be at most 256 characters"),
            ("/v1/transactions", #"{"user_id":"u","signed_transaction":false}"#, "signed_transaction must be a string"),
            ("/v1/transactions", #"{"user_id":"u"}"#, "signed_transaction is required"),
        ]
        for (path, body, message) in cases {
            let response = try await h.send("POST", path, body: body)
            XCTAssertEqual(response.status, 400, body)
            XCTAssertEqual(response.header("content-type"), "application/json")
            XCTAssertEqual(response.errorMessage, message, body)
        }
        let empty = try await h.send("POST", "/v1/receipts", bytes: [])
        XCTAssertEqual(empty.status, 400)
        XCTAssertEqual(empty.errorMessage, "malformed JSON: empty document")
        let jobs = try await h.count("SELECT count(*) FROM iap.jobs")
        XCTAssertEqual(jobs, 0)
        XCTAssertTrue(h.logs.lines.contains {
            $0.contains("level=debug event=ingest_rejected status=400 route=/v1/receipts reason=\"receipt_data must be base64\"")
        }, h.logs.lines.joined(separator: "\n"))
        await h.close()
    }

    func testServerLevelRejections() async throws {
        let h = try await IngestHarness(maxBodyBytes: 1024)
        let big = #"{"user_id":"u","receipt_data":"\#(String(repeating: "QUJD", count: 1024))"}"#
        let tooLarge = try await h.send("POST", "/v1/receipts", body: big)
        XCTAssertEqual(tooLarge.status, 413)
        XCTAssertNotNil(tooLarge.errorMessage)
        let unknown = try await h.send("GET", "/v1/nothing")
        XCTAssertEqual(unknown.status, 404)
        XCTAssertEqual(unknown.errorMessage, "not found")
        let wrongMethod = try await h.send("GET", "/v1/receipts")
        XCTAssertEqual(wrongMethod.status, 405)
        XCTAssertEqual(wrongMethod.header("allow"), "POST")
        let deleteJob = try await h.send("DELETE", "/v1/jobs/1")
        XCTAssertEqual(deleteJob.status, 405)
        let jobs = try await h.count("SELECT count(*) FROM iap.jobs")
        XCTAssertEqual(jobs, 0)
        await h.close()
    }

    func testFloodOfBadRequestsLeavesNoPartialJobs() async throws {
        let h = try await IngestHarness()
        let receipt = sampleReceipt(5)
        let bad: [(String, String?, String?)] = [  // path, body, token
            ("/v1/receipts", "{", IngestHarness.token),
            ("/v1/receipts", #"{"user_id":1,"receipt_data":"\#(receipt)"}"#, IngestHarness.token),
            ("/v1/receipts", #"{"user_id":"u"}"#, IngestHarness.token),
            ("/v1/receipts", #"{"user_id":"u","receipt_data":"%%%"}"#, IngestHarness.token),
            ("/v1/receipts", #"{"user_id":"u","receipt_data":"\#(receipt)"}"#, "nope"),
            ("/v1/transactions", #"{"user_id":"","signed_transaction":"x"}"#, IngestHarness.token),
            ("/v1/transactions", #"{"user_id":"u","signed_transaction":"x"}"#, nil),
            ("/v1/notifications", #"{"signedPayload":null}"#, nil),
            ("/v1/notifications", "\u{0}\u{1}", nil),
            ("/v1/jobs/x", nil, IngestHarness.token),
        ]
        var good = 0
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var statuses = 0
                    for index in stride(from: worker, to: 1_000, by: 4) {
                        let (path, body, token) = bad[index % bad.count]
                        let response = try await h.send(body == nil ? "GET" : "POST", path, body: body, token: token)
                        XCTAssertTrue([400, 401].contains(response.status), "\(path) \(body ?? "") → \(response.status)")
                        statuses += 1
                    }
                    return statuses
                }
            }
            let sent = try await group.reduce(0, +)
            XCTAssertEqual(sent, 1_000)
        }
        _ = try await h.enqueue("/v1/receipts", #"{"user_id":"u","order_id":"o","receipt_data":"\#(receipt)"}"#)
        good += 1
        _ = try await h.enqueue("/v1/notifications", #"{"signedPayload":"a.b.c"}"#, token: nil)
        good += 1
        let jobs = try await h.count("SELECT count(*) FROM iap.jobs")
        XCTAssertEqual(jobs, good)
        await h.close()
    }

    func testMetricsEndpoint() async throws {
        let h = try await IngestHarness()
        // The registry passed in is the one rendered, so other components' metrics show up too.
        h.metrics.counter("iap_other_component_total", help: "Another component.").inc()
        _ = try await h.enqueue("/v1/receipts", #"{"user_id":"u","receipt_data":"\#(sampleReceipt(6))"}"#)
        _ = try await h.enqueue("/v1/receipts", #"{"user_id":"u","receipt_data":"\#(sampleReceipt(6))"}"#)  // same job
        _ = try await h.send("POST", "/v1/receipts", body: "{")
        _ = try await h.send("GET", "/v1/jobs/123")
        let response = try await h.send("GET", "/metrics", token: nil)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("content-type"), "text/plain; version=0.0.4; charset=utf-8")
        let text = response.text
        for expected in [
            "# TYPE iap_ingest_requests_total counter",
            #"iap_ingest_requests_total{route="/v1/receipts",status="202"} 2"#,
            #"iap_ingest_requests_total{route="/v1/receipts",status="400"} 1"#,
            #"iap_ingest_requests_total{route="/v1/jobs/{id}",status="404"} 1"#,
            "# TYPE iap_ingest_request_duration_seconds histogram",
            #"iap_ingest_request_duration_seconds_count{route="/v1/receipts"} 3"#,
            #"iap_ingest_jobs_enqueued_total{kind="receipt"} 1"#,
            #"iap_ingest_jobs_enqueued_total{kind="notification"} 0"#,
            "iap_other_component_total 1",
        ] {
            XCTAssertTrue(text.contains(expected), "missing \(expected) in\n\(text)")
        }
        await h.close()
    }

    func testDatabaseUnavailableIs503WithoutInternals() async throws {
        // Port 1 on loopback: connection refused at once.
        let h = try await IngestHarness(databaseURL: "postgresql://nobody:pw-secret@127.0.0.1:1/none?connect_timeout=2")
        let receipt = try await h.send("POST", "/v1/receipts", body: #"{"user_id":"u","receipt_data":"\#(sampleReceipt(7))"}"#)
        XCTAssertEqual(receipt.status, 503)
        XCTAssertEqual(receipt.text, #"{"error":"database unavailable"}"#)
        let poll = try await h.send("GET", "/v1/jobs/1")
        XCTAssertEqual(poll.status, 503)
        let notification = try await h.send("POST", "/v1/notifications", body: #"{"signedPayload":"a.b.c"}"#, token: nil)
        XCTAssertEqual(notification.status, 503)
        // Validation still answers without the database.
        let bad = try await h.send("POST", "/v1/receipts", body: "{")
        XCTAssertEqual(bad.status, 400)
        XCTAssertTrue(h.logs.lines.contains { $0.contains("event=ingest_database_error") })
        XCTAssertFalse(h.logs.lines.contains { $0.contains("pw-secret") || $0.contains(sampleReceipt(7)) })
        await h.close()
    }

    func testMultibyteUserIDsRoundTrip() async throws {
        let h = try await IngestHarness()
        let users = ["ユーザー", "müller", "😀🎮", "אבג", "\u{65}\u{301}"]  // the last one: e + combining accent
        var ids: [Int64] = []
        for user in users {
            ids.append(try await h.enqueue("/v1/receipts",
                                           #"{"user_id":\#(jsonString(user)),"order_id":"ордер-1","receipt_data":"\#(sampleReceipt(8))"}"#))
        }
        XCTAssertEqual(Set(ids).count, users.count)
        for (user, id) in zip(users, ids) {
            let rows = try await h.client.query("SELECT user_id, order_id FROM iap.jobs WHERE id = $1", [id])
            let row = try XCTUnwrap(rows.first)
            XCTAssertEqual(try row.decode(String.self, "user_id").unicodeScalars.elementsEqual(user.unicodeScalars), true, user)
            let poll = try await h.send("GET", "/v1/jobs/\(id)")
            XCTAssertEqual(poll.json["order_id"] as? String, "ордер-1")
        }
        await h.close()
    }
}
