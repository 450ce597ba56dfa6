@testable import SupportConsole
import XCTest

/// CONSOLE_TRUSTED_PROXY takes addresses and CIDR ranges: behind a Kubernetes Ingress the
/// controller's pods come and go within the cluster's pod network.
final class TrustedProxiesTests: XCTestCase {
    func testAddressesAndRangesOfBothFamilies() throws {
        let proxies = try TrustedProxies(["10.244.0.0/16", "192.168.1.7", "fd00:abcd::/32", "::1"])
        for inside in ["10.244.0.1", "10.244.255.255", "192.168.1.7", "fd00:abcd:1::9", "::1"] {
            XCTAssertTrue(proxies.contains(inside), inside)
        }
        for outside in ["10.245.0.1", "192.168.1.8", "fd00:abce::1", "::2", "::ffff:10.244.0.1", "unknown", "", "10.244.0.1/16"] {
            XCTAssertFalse(proxies.contains(outside), outside)
        }
    }

    func testPrefixesAtTheEdges() throws {
        XCTAssertTrue(try TrustedProxies(["0.0.0.0/0"]).contains("203.0.113.9"))
        XCTAssertFalse(try TrustedProxies(["0.0.0.0/0"]).contains("::1"), "an IPv4 range never holds an IPv6 address")
        XCTAssertTrue(try TrustedProxies(["10.1.2.3/32"]).contains("10.1.2.3"))
        XCTAssertFalse(try TrustedProxies(["10.1.2.3/32"]).contains("10.1.2.4"))
        XCTAssertTrue(try TrustedProxies(["10.1.2.128/25"]).contains("10.1.2.200"))
        XCTAssertFalse(try TrustedProxies(["10.1.2.128/25"]).contains("10.1.2.127"))
    }

    func testAnythingElseIsRefusedByName() {
        for bad in ["proxy.internal", "10.0.0.0/33", "fd00::/129", "10.0.0.0/-1", "10.0.0.0/x", "10.0.0/8", ""] {
            XCTAssertThrowsError(try TrustedProxies([bad]), bad) { error in
                XCTAssertTrue("\(error)".contains("'\(bad)'"), "\(error)")
            }
        }
    }
}
