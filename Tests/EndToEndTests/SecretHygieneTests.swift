import Foundation
import Postgres
import TestSupport
import XCTest

/// Secrets and receipts never reach output; secrets can come from files.
final class SecretHygieneTests: XCTestCase {
    func testFullDemoRunPrintsNoSecretAndNoReceipt() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let demo = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "demo"],
                                              environment: ["DATABASE_URL": url, "MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
                                                            "LOG_LEVEL": "debug"], timeout: 180)
        XCTAssertEqual(demo.code, 0, demo.stderr + demo.stdout.suffix(3_000))
        let output = demo.stdout + demo.stderr
        XCTAssertTrue(output.contains("MISMATCH") == false, output)
        XCTAssertFalse(output.contains("demo-shared-secret"), "the shared secret leaked")
        // Minted receipts are base64 JSON ({"…  -> eyJ…), as are JWS: neither may appear.
        XCTAssertFalse(output.contains("eyJ"), "receipt data leaked")
        XCTAssertTrue(output.contains("event=job_finished"), "debug run logs the jobs")
        // What the demo leaves for the console: its database named, and frank's
        // paid_not_credited alert with an open order it can be credited to.
        XCTAssertTrue(demo.stdout.contains("DATABASE_URL=\(url)"), demo.stdout.suffix(2_000).description)
        XCTAssertTrue(demo.stdout.contains("one-time password") && demo.stdout.contains("MQ7DEMO789"))
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        let creditable: Int = try await client.query("""
            SELECT count(*) FROM iap.alerts a JOIN iap.orders o ON o.user_id = a.user_id AND o.product_id = a.product_id AND o.status = 'open'
            WHERE a.kind = 'paid_not_credited' AND a.state = 'open' AND a.user_id = 'frank'
            """)[0].decode(Int.self, at: 0)
        await client.close()
        XCTAssertEqual(creditable, 1, "frank's alert has an open order to credit")
    }

    func testSharedSecretFromFileAndBadFile() async throws {
        let url = try await TestDatabase.fresh()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let empty = folder.appendingPathComponent("empty").path
        XCTAssertTrue(FileManager.default.createFile(atPath: empty, contents: Data()))
        let base = ["DATABASE_URL": url, "APPLE_BUNDLE_ID": "com.example", "METRICS_LISTEN": "off"]
        let missing = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "work"],
                                                 environment: base.merging(["APPLE_SHARED_SECRET_FILE": folder.appendingPathComponent("nope").path]) { $1 })
        XCTAssertEqual(missing.code, 2)
        XCTAssertTrue(missing.stderr.contains("APPLE_SHARED_SECRET_FILE"), missing.stderr)
        let blank = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "work"],
                                               environment: base.merging(["APPLE_SHARED_SECRET_FILE": empty]) { $1 })
        XCTAssertEqual(blank.code, 2)
        XCTAssertTrue(blank.stderr.contains("is empty"), blank.stderr)
        let insecure = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "work"],
                                                  environment: base.merging(["APPLE_VERIFY_RECEIPT_URL": "http://apple.example.com/verifyReceipt"]) { $1 })
        XCTAssertEqual(insecure.code, 2, "plain HTTP to Apple is refused: \(insecure.stderr)")
        XCTAssertEqual(insecure.stderr.split(separator: "\n").count, 1, insecure.stderr)
    }
}
