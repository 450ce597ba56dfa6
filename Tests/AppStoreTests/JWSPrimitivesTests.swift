import AppStore
import AppleSim
import Foundation
import StoreKitCrypto
import XCTest

final class JWSPrimitivesTests: XCTestCase {
    func testBase64URLRoundTripAndStrictAlphabet() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + 250) % 256) }
            let text = JWSBase64URL.encode(bytes)
            XCTAssertFalse(text.contains("=") || text.contains("+") || text.contains("/"))
            XCTAssertEqual(JWSBase64URL.decode(text), bytes)
        }
        XCTAssertNil(JWSBase64URL.decode("ab+c"))
        XCTAssertNil(JWSBase64URL.decode("abc="))
        XCTAssertNil(JWSBase64URL.decode("a"))
        XCTAssertEqual(JWSBase64URL.decode(""), [])
    }

    func testES256SignVerifyAndKeyPEMRoundTrip() throws {
        let key = try ES256PrivateKey.generate()
        let message = Array("header.payload".utf8)
        let signature = try key.signature(for: message)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(try key.publicKey.isValidSignature(signature, for: message))
        XCTAssertFalse(try key.publicKey.isValidSignature(signature, for: message + [0]))
        XCTAssertFalse(try key.publicKey.isValidSignature(Array(signature.prefix(63)), for: message))
        XCTAssertFalse(try key.publicKey.isValidSignature([UInt8](repeating: 0, count: 64), for: message))

        let pem = try key.pkcs8PEM()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try ES256PrivateKey(pem: pem)
        XCTAssertTrue(try key.publicKey.isValidSignature(reloaded.signature(for: message), for: message))
        let publicPEM = try key.publicKey.pemRepresentation
        XCTAssertTrue(try ES256PublicKey(pem: publicPEM).isValidSignature(signature, for: message))
        XCTAssertEqual("\(key)", "ES256PrivateKey(<redacted>)")
        XCTAssertThrowsError(try ES256PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
    }

    func testBundledAppleRootParses() throws {
        let root = try XCTUnwrap(StoreKitTrustedRoots.appleDefault().first)
        let fingerprint = root.sha256FingerprintText
        XCTAssertTrue(fingerprint.hasPrefix("63:34:3A:BF"), fingerprint)
        XCTAssertTrue(fingerprint.hasSuffix("91:79"), fingerprint)
        XCTAssertTrue(root.subject.contains("Apple Root CA - G3"), root.subject)
        XCTAssertEqual(root.notAfter, Date(timeIntervalSince1970: 2_187_800_346))  // 2039-04-30T18:19:06Z
    }

    func testCertificateParsingAndMarkerOIDs() throws {
        let chain = JWSFixtures.chain
        XCTAssertTrue(chain.leaf.hasExtension(oid: StoreKitSignedDataVerifier.leafMarkerOID))
        XCTAssertFalse(chain.leaf.hasExtension(oid: StoreKitSignedDataVerifier.intermediateMarkerOID))
        XCTAssertTrue(chain.intermediate.hasExtension(oid: StoreKitSignedDataVerifier.intermediateMarkerOID))
        XCTAssertFalse(chain.leaf.hasExtension(oid: "not an oid"))
        XCTAssertEqual(chain.leaf.notBefore, JWSFixtures.chainValidity.lowerBound)
        XCTAssertEqual(chain.leaf.notAfter, JWSFixtures.chainValidity.upperBound)
        let der = chain.leaf.derRepresentation
        XCTAssertEqual(try X509Certificate(der: der).derRepresentation, der)
        XCTAssertEqual(try X509Certificate(pem: chain.leaf.pemRepresentation).derRepresentation, der)
        XCTAssertThrowsError(try X509Certificate(der: der + [0]))
        XCTAssertThrowsError(try X509Certificate(der: Array(der.prefix(20))))
    }

    func testChainVerificationAtAGivenTime() throws {
        let chain = JWSFixtures.chain
        let store = try X509TrustStore(roots: [chain.root])
        let inside = JWSFixtures.signedDate
        let window = try store.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: inside, expectedLength: 3)
        XCTAssertEqual(window, JWSFixtures.chainValidity)
        XCTAssertThrowsError(try store.verify(leaf: chain.leaf, intermediates: [chain.intermediate],
                                              at: Date(timeIntervalSince1970: 1_900_000_000)))
        XCTAssertThrowsError(try store.verify(leaf: chain.leaf, intermediates: [], at: inside))
        let stranger = try X509TrustStore(roots: [JWSFixtures.otherChain.root])
        XCTAssertThrowsError(try stranger.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: inside))
    }

    func testRootLoaderReadsPEMAndDERFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jws-roots-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pemPath = directory.appendingPathComponent("sim-root.pem").path
        let derPath = directory.appendingPathComponent("other-root.cer").path
        try JWSFixtures.chain.writeRootPEM(to: pemPath)
        try Data(JWSFixtures.otherChain.root.derRepresentation).write(to: URL(fileURLWithPath: derPath))

        let roots = try StoreKitTrustedRoots.load(appleRootCerts: "\(pemPath), \(derPath)")
        XCTAssertEqual(roots.map(\.derRepresentation), [JWSFixtures.chain.root.derRepresentation,
                                                        JWSFixtures.otherChain.root.derRepresentation])
        XCTAssertEqual(try StoreKitTrustedRoots.load(appleRootCerts: " ").first?.sha256FingerprintText.hasPrefix("63:34:3A:BF"), true)
        XCTAssertThrowsError(try StoreKitTrustedRoots.load(appleRootCerts: directory.appendingPathComponent("missing.pem").path)) { error in
            XCTAssertTrue("\(error)".contains("missing.pem"))
        }
    }
}
