import AppStore
import AppleSim
import Foundation
import HTTP
import Postgres
import TestSupport
import XCTest

/// `reconcile --date D [--json]`, the real binary against apple-sim's Sales and Trends report.
final class ReconcileCommandTests: XCTestCase {
    let binary = ChildProcess.receiptWorkerPath

    func testAGapIsPrintedAlertedAndResolvedFromTheCommandLine() async throws {
        let url = try await TestDatabase.fresh()
        let sim = AppleSimulator()
        try sim.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rw-reconcile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("team.p8").path
        try sim.serverAPI.writeAPIPrivateKey(to: keyFile)
        sim.serverAPI.trustConnectAPIKey(try sim.serverAPI.apiPrivateKey.publicKey, keyID: "TEAMKEY001", issuerID: "team-issuer",
                                         vendorNumber: "85000001")
        let env = ["DATABASE_URL": url, "APPSTORECONNECT_API_URL": sim.baseURL.absoluteString, "APPSTORECONNECT_ISSUER_ID": "team-issuer",
                   "APPSTORECONNECT_KEY_ID": "TEAMKEY001", "APPSTORECONNECT_PRIVATE_KEY_FILE": keyFile,
                   "APPSTORECONNECT_VENDOR_NUMBER": "85000001", "LOG_LEVEL": "error"]
        let day = ReportDay(containing: Date().addingTimeInterval(-86_400))
        let noon = day.start.addingTimeInterval(12 * 3600)

        // Apple answered verifyReceipt for two purchases and sold one more that no client uploaded.
        let ms = Int64(noon.timeIntervalSince1970 * 1000)
        let receipt = SimReceipt(bundleID: "com.example.cli", transactions: [
            .init(transactionID: "cli-r1", productID: "gems_10", purchaseDateMs: ms),
            .init(transactionID: "cli-r2", productID: "gems_10", purchaseDateMs: ms),
        ]).mint()
        let transport = try SocketHTTPTransport()
        let verify = HTTPClientRequest(method: "POST", url: sim.productionURL, headers: [("Content-Type", "application/json")],
                                       body: Array(#"{"receipt-data":"\#(receipt)"}"#.utf8))
        _ = try await transport.send(verify, timeout: .seconds(5))
        let injectBody = #"{"product_id":"gems_10","count":1,"purchase_date_ms":\#(ms)}"#
        let inject = HTTPClientRequest(method: "POST", url: sim.baseURL.appendingPathComponent("sim/sales"),
                                       headers: [("Content-Type", "application/json")], body: Array(injectBody.utf8))
        let injected = try await transport.send(inject, timeout: .seconds(5))
        XCTAssertEqual(injected.status, 200)
        let gapID = try XCTUnwrap(((try JSONSerialization.jsonObject(with: Data(injected.body))) as? [String: Any])?["transaction_ids"] as? [String]).first!

        let client = PostgresClient(conninfo: url)
        func credit(_ id: String) async throws {
            _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id, status) VALUES ($1, 'quinn', 'gems_10', 'credited')", ["o-\(id)"])
            _ = try await client.query("""
                INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, purchased_at)
                VALUES ($1, $2, 'quinn', 'gems_10', 1, 'Production', $3)
                """, [id, "o-\(id)", noon])
        }
        try await credit("cli-r1")

        let json = try await ChildProcess.run([binary, "reconcile", "--date", day.description, "--json"], environment: env)
        XCTAssertEqual(json.code, 0, json.stderr)
        // stdout is the JSON document alone (a pipe into jq works); the log lines, the alert's included, go to stderr.
        XCTAssertEqual(json.stdout, #"{"day":"\#(day)","available":true,"products":["#
                       + #"{"product_id":"gems_10","apple_units":3,"apple_returns":0,"credited":1,"revoked":0,"gap":2}]}"# + "\n")
        XCTAssertTrue(json.stderr.contains("event=reconciliation_gap"), json.stderr)
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)))
        let open = try await client.query("SELECT details ->> 'difference' FROM iap.alerts WHERE kind = 'reconciliation_gap' AND state = 'open'")
        XCTAssertEqual(try open.map { try $0.decode(String.self, at: 0) }, ["2"])

        // With the App Store Server API configured, the shortfall's buyers are looked for (none can be named here).
        let serverKey = folder.appendingPathComponent("inapp.p8").path
        try sim.serverAPI.writeAPIPrivateKey(to: serverKey)
        let withHistory = env.merging(["APPLE_BUNDLE_ID": "com.example.cli", "APPSTORE_API_URL": sim.baseURL.absoluteString,
                                       "APPSTORE_ISSUER_ID": SimServerAPI.defaultIssuerID, "APPSTORE_KEY_ID": SimServerAPI.defaultKeyID,
                                       "APPSTORE_PRIVATE_KEY_FILE": serverKey]) { $1 }
        let gapTable = try await ChildProcess.run([binary, "reconcile", "--date", day.description], environment: withHistory)
        XCTAssertEqual(gapTable.code, 0, gapTable.stderr)
        XCTAssertTrue(gapTable.stdout.contains("1 product(s) with a gap; 0 alert(s) opened"), gapTable.stdout)
        XCTAssertTrue(gapTable.stdout.contains("gems_10: 0 buyer(s)' histories pulled"), gapTable.stdout)

        try await credit("cli-r2")
        try await credit(gapID)
        let table = try await ChildProcess.run([binary, "reconcile", "--date", day.description], environment: env)
        XCTAssertEqual(table.code, 0, table.stderr)
        XCTAssertTrue(table.stdout.contains("reconciled: every product matches; 1 alert(s) resolved"), table.stdout)
        XCTAssertTrue(table.stdout.contains("gems_10"), table.stdout)

        let today = try await ChildProcess.run([binary, "reconcile", "--date", ReportDay(containing: Date()).description, "--json"],
                                               environment: env.merging(["LOG_LEVEL": "info"]) { $1 })
        XCTAssertEqual(today.code, 0, today.stderr)
        XCTAssertEqual(today.stdout, #"{"day":"\#(ReportDay(containing: Date()))","available":false,"products":[]}"# + "\n", "LOG_LEVEL=info's lines went to stderr")

        let wrongVendor = try await ChildProcess.run([binary, "reconcile", "--date", day.description],
                                                     environment: env.merging(["APPSTORECONNECT_VENDOR_NUMBER": "1"]) { $1 })
        XCTAssertEqual(wrongVendor.code, 2, wrongVendor.stderr)
        let noDate = try await ChildProcess.run([binary, "reconcile"], environment: env)
        XCTAssertEqual(noDate.code, 2)
        await client.close()
        await transport.shutdown()
        await sim.shutdown()
    }
}

/// The leader's daily duty in a real `work` process: with the App Store Connect settings, the last
/// finished Pacific days are reconciled without anyone asking.
final class ReconciliationDutyTests: XCTestCase {
    func testTheLeaderReconcilesYesterdayOnItsOwn() async throws {
        let url = try await TestDatabase.fresh()
        let sim = AppleSimulator()
        try sim.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rw-duty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("team.p8").path
        try sim.serverAPI.writeAPIPrivateKey(to: keyFile)
        let day = ReportDay(containing: ReportDay(containing: Date()).start.addingTimeInterval(-1))
        sim.serverAPI.injectUnuploadedSales(productID: "gems_10", count: 4, purchaseDate: day.start.addingTimeInterval(3600))
        let worker = try ChildProcess.receiptWorker(["work"], environment: [
            "DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "info", "APPLE_BUNDLE_ID": "com.example.duty",
            "APPLE_VERIFY_RECEIPT_URL": sim.productionURL.absoluteString, "APPLE_VERIFY_RECEIPT_SANDBOX_URL": sim.sandboxURL.absoluteString,
            "APPSTORECONNECT_API_URL": sim.baseURL.absoluteString, "APPSTORECONNECT_ISSUER_ID": SimServerAPI.defaultIssuerID,
            "APPSTORECONNECT_KEY_ID": SimServerAPI.defaultKeyID, "APPSTORECONNECT_PRIVATE_KEY_FILE": keyFile,
            "APPSTORECONNECT_VENDOR_NUMBER": "85000001",
        ])
        defer { worker.signal(SIGKILL) }
        let client = PostgresClient(conninfo: url)
        let reconciled = try await eventually(60, every: .milliseconds(200)) {
            try await client.query("SELECT apple_units, credited FROM iap.reconciliation_days WHERE day = $1::date AND product_id = 'gems_10'",
                                   [day.description]).first.map { try $0.decode(Int.self, at: 0) == 4 && $0.decode(Int.self, at: 1) == 0 } ?? false
        }
        XCTAssertTrue(reconciled, worker.stdout)
        let alerts = try await client.query("SELECT count(*) FROM iap.alerts WHERE kind = 'reconciliation_gap' AND state = 'open'")[0]
            .decode(Int.self, at: 0)
        XCTAssertEqual(alerts, 1)
        worker.signal(SIGTERM)
        _ = try await worker.wait(timeout: 30)
        XCTAssertTrue(worker.stdout.contains("event=reconciliation_gap"), worker.stdout)
        await client.close()
        await sim.shutdown()
    }
}
