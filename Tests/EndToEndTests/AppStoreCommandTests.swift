import AppStore
import AppleSim
import Foundation
import Postgres
import TestSupport
import XCTest

/// `support lookup-order` and `notifications backfill`, the real binary against apple-sim.
final class AppStoreCommandTests: XCTestCase {
    let binary = ChildProcess.receiptWorkerPath

    private func environment(_ url: String, _ sim: AppleSimulator, folder: URL) throws -> [String: String] {
        let keyFile = folder.appendingPathComponent("key.p8").path, rootFile = folder.appendingPathComponent("root.pem").path
        try sim.serverAPI.writeAPIPrivateKey(to: keyFile)
        try sim.serverAPI.signingChain.writeRootPEM(to: rootFile)
        return ["DATABASE_URL": url, "APPLE_BUNDLE_ID": "com.example.cli", "APPSTORE_API_URL": sim.baseURL.absoluteString,
                "APPSTORE_API_SANDBOX_URL": sim.baseURL.appendingPathComponent("sandbox").absoluteString,
                "APPSTORE_ISSUER_ID": SimServerAPI.defaultIssuerID, "APPSTORE_KEY_ID": SimServerAPI.defaultKeyID,
                "APPSTORE_PRIVATE_KEY_FILE": keyFile, "APPLE_ROOT_CERTS": rootFile, "LOG_LEVEL": "error"]
    }

    func testLookUpCreditAndBackfillFromTheCommandLine() async throws {
        let url = try await TestDatabase.fresh()
        let sim = AppleSimulator()
        try sim.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rw-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let env = try environment(url, sim, folder: folder)
        let client = PostgresClient(conninfo: url)
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id) VALUES ('cli-1', 'quinn', 'gems_10')")
        sim.serverAPI.registerOrder("MQCLI00001", transactions: [
            JWSTransactionPayload(transactionId: "cli-t1", originalTransactionId: "cli-t1", bundleId: "com.example.cli", productId: "gems_10",
                                  purchaseDate: Date(), environment: "Production"),
        ])

        let shown = try await ChildProcess.run([binary, "support", "lookup-order", "MQCLI00001"], environment: env)
        XCTAssertEqual(shown.code, 0, shown.stderr)
        XCTAssertTrue(shown.stdout.contains("cli-t1") && shown.stdout.contains("not credited"), shown.stdout)
        let credit = try await ChildProcess.run([binary, "support", "lookup-order", "MQCLI00001", "--user", "quinn", "--order", "cli-1"],
                                                environment: env)
        XCTAssertEqual(credit.code, 0, credit.stderr)
        XCTAssertTrue(credit.stdout.contains("credited to order cli-1"), credit.stdout)
        let again = try await ChildProcess.run([binary, "support", "lookup-order", "MQCLI00001", "--user", "quinn", "--order", "cli-1"],
                                               environment: env)
        XCTAssertTrue(again.stdout.contains("already credited"), again.stdout)
        let credits = try await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0)
        XCTAssertEqual(credits, 1)

        let invalid = try await ChildProcess.run([binary, "support", "lookup-order", "NOSUCHORDER"], environment: env)
        XCTAssertEqual(invalid.code, 1)
        XCTAssertEqual(invalid.stderr.split(separator: "\n").count, 1, invalid.stderr)
        XCTAssertTrue(invalid.stderr.contains("Apple does not know order id NOSUCHORDER"), invalid.stderr)
        // Every lookup, found or failed, is kept (the console's find box answers the id) and audited,
        // naming the operating system user; the credit's audit row and lookup row name the buyer.
        let lookups = try await client.query("""
            SELECT apple_order_id, result, coalesce(user_id, '-'), actor FROM iap.apple_order_lookups ORDER BY id
            """).map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String.self, at: 1)) \(try $0.decode(String.self, at: 2))" }
        XCTAssertEqual(lookups, ["MQCLI00001 found -", "MQCLI00001 found -", "MQCLI00001 found quinn", "MQCLI00001 found quinn",
                                 "MQCLI00001 found quinn", "NOSUCHORDER failed -"])
        let audit = try await client.query("SELECT action, target, actor FROM iap.audit_log ORDER BY id")
            .map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String.self, at: 1))" }
        XCTAssertEqual(audit, ["lookup apple_order:MQCLI00001", "lookup apple_order:MQCLI00001", "lookup_credit transaction:cli-t1",
                               "lookup apple_order:MQCLI00001", "lookup_credit transaction:cli-t1", "lookup apple_order:NOSUCHORDER"])
        let actors = try await client.query("SELECT DISTINCT actor FROM iap.audit_log").map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(actors, [NSUserName()])
        let noCredentials = try await ChildProcess.run([binary, "support", "lookup-order", "X1"], environment: ["DATABASE_URL": url, "APPLE_BUNDLE_ID": "b"],
                                                       removing: ["APPSTORE_ISSUER_ID", "APPSTORE_KEY_ID", "APPSTORE_PRIVATE_KEY_FILE"])
        XCTAssertEqual(noCredentials.code, 2, noCredentials.stderr)

        let signed = try sim.serverAPI.signingChain.signNotification(type: "TEST", transaction: nil, bundleID: "com.example.cli", appAppleID: nil,
                                                                     environment: .production)
        sim.serverAPI.recordNotification(signed, sentAt: Date().addingTimeInterval(-3600), delivered: false)
        let backfill = try await ChildProcess.run([binary, "notifications", "backfill", "--since", "72h"], environment: env)
        XCTAssertEqual(backfill.code, 0, backfill.stderr)
        XCTAssertTrue(backfill.stdout.contains("1 enqueued as new jobs, 0 already queued"), backfill.stdout)
        let noSince = try await ChildProcess.run([binary, "notifications", "backfill"], environment: env)
        XCTAssertEqual(noSince.code, 2)
        XCTAssertTrue(noSince.stderr.contains("--since"), noSince.stderr)
        await client.close()
        await sim.shutdown()
    }
}
