import AppStore
import AppleSim
import Foundation
import TestSupport
import XCTest

/// `receipt-worker inspect`: support's view of a JWS or a receipt.
final class InspectCommandTests: XCTestCase {
    func testInspectExplainsEachCheck() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let chain = try SimSigningChain()
        let root = folder.appendingPathComponent("root.pem").path
        try chain.writeRootPEM(to: root)
        let payload = JWSTransactionPayload(transactionId: "i-1", bundleId: "com.example.inspect", productId: "coins", signedDate: Date(),
                                            environment: "Production")
        let valid = try chain.signTransaction(payload)
        let validFile = folder.appendingPathComponent("valid.jws").path
        try valid.write(toFile: validFile, atomically: true, encoding: .utf8)
        let ok = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "inspect", validFile, "--root-certs", root,
                                             "--bundle-id", "com.example.inspect"])
        XCTAssertEqual(ok.code, 0, ok.stderr + ok.stdout)
        XCTAssertTrue(ok.stdout.contains("result: verified"), ok.stdout)
        XCTAssertTrue(ok.stdout.contains("\"transactionId\" : \"i-1\""), ok.stdout)

        var parts = valid.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        let tamperedFile = folder.appendingPathComponent("tampered.jws").path
        try parts.joined(separator: ".").write(toFile: tamperedFile, atomically: true, encoding: .utf8)
        let bad = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "inspect", tamperedFile, "--root-certs", root])
        XCTAssertEqual(bad.code, 1)
        XCTAssertTrue(bad.stdout.contains("signature over the leaf key: FAILED"), bad.stdout)
        XCTAssertTrue(bad.stdout.contains("payload decodes: not reached"), bad.stdout)

        let untrusted = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "inspect", validFile]) // Apple's root only
        XCTAssertEqual(untrusted.code, 1)
        XCTAssertTrue(untrusted.stdout.contains("chain to a trusted root, valid at signedDate: FAILED"), untrusted.stdout)

        let receiptFile = folder.appendingPathComponent("receipt.txt").path
        try SimReceipt(bundleID: "com.example.inspect", transactions: [.init(transactionID: "r-9", productID: "gems")]).mint()
            .write(toFile: receiptFile, atomically: true, encoding: .utf8)
        let receipt = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "inspect", receiptFile])
        XCTAssertEqual(receipt.code, 0)
        XCTAssertTrue(receipt.stdout.contains("transaction r-9 product=gems"), receipt.stdout)

        let missing = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "inspect", folder.appendingPathComponent("nope").path])
        XCTAssertEqual(missing.code, 2)
    }
}
