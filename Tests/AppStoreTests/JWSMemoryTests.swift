import AppStore
import AppleSim
import Foundation
import StoreKitCrypto
import XCTest

/// Leak check: OpenSSL objects that are not freed show up as steady RSS growth over many calls.
final class JWSMemoryTests: XCTestCase {
    /// VmRSS from /proc/self/status in KiB (nil off Linux).
    private func residentKiB() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    func testTwentyThousandVerificationsDoNotGrowMemory() throws {
        let chain = JWSFixtures.chain
        let valid = try chain.signTransaction(JWSFixtures.transaction())
        let parts = valid.split(separator: ".").map(String.init)
        let tampered = [parts[0], JWSBase64URL.encode(SimSigningChain.jsonForTests(JWSFixtures.transaction("x"))), parts[2]]
            .joined(separator: ".")
        let untrusted = try JWSFixtures.otherChain.signTransaction(JWSFixtures.transaction())
        let notification = try chain.signNotification(type: "ONE_TIME_CHARGE", transaction: JWSFixtures.transaction(),
                                                      bundleID: JWSFixtures.bundleID, appAppleID: JWSFixtures.appAppleID,
                                                      environment: .production, signedDate: JWSFixtures.signedDate)
        let uncached = JWSFixtures.verifier(cacheCapacity: 0)
        let cached = JWSFixtures.verifier()
        let key = try ES256PrivateKey.generate()
        let publicKey = try key.publicKey

        func round(_ count: Int) throws {
            for i in 0..<count {
                // Uncached calls parse certificates and build chains every time: where leaks would be.
                switch i % 10 {
                case 0: XCTAssertEqual(uncached.transactionOutcome(tampered), "signature_invalid")
                case 1: XCTAssertEqual(uncached.transactionOutcome(untrusted), "chain_invalid")
                case 2: _ = try uncached.verifyNotification(notification)  // two full chains
                case 3: XCTAssertTrue(publicKey.isValidSignature(try key.signature(for: [UInt8(i & 0xff)]), for: [UInt8(i & 0xff)]))
                case 4: _ = try uncached.verifyTransaction(valid)
                default: _ = try cached.verifyTransaction(valid)
                }
            }
        }
        // JWS_LEAK_LOOP shortens the loop for a run under `valgrind --leak-check=full`.
        let iterations = ProcessInfo.processInfo.environment["JWS_LEAK_LOOP"].flatMap { Int($0) } ?? 20_000
        try round(min(400, iterations))  // warm up allocator pools and lazily created OpenSSL state
        let before = try XCTUnwrap(residentKiB())
        try round(iterations)
        let after = try XCTUnwrap(residentKiB())
        // A leaked X509 or EVP_PKEY per call would add tens of MB here.
        XCTAssertLessThan(after - before, 16 * 1024, "RSS grew from \(before) KiB to \(after) KiB")
        print("JWSMemoryTests: VmRSS \(before) KiB -> \(after) KiB over \(iterations) operations")
    }
}
