import Foundation
import HTTP

/// Where and how to call verifyReceipt. Defaults point at Apple; the simulator is configured by
/// overriding both URLs (plain http is accepted for loopback hosts only).
public struct ReceiptVerifierConfiguration: Sendable {
    public static let appleProductionURL = URL(string: "https://buy.itunes.apple.com/verifyReceipt")!
    public static let appleSandboxURL = URL(string: "https://sandbox.itunes.apple.com/verifyReceipt")!

    public var productionURL: URL
    public var sandboxURL: URL
    /// The app's shared secret (`password` in the body). Empty counts as none.
    public var sharedSecret: String?
    /// Whether receipts answered with 21007 may be verified against the sandbox. Off in production:
    /// a sandbox purchase costs nothing.
    public var allowSandbox: Bool
    public var bundleID: String
    /// Deadline for each HTTP exchange with Apple (Apple takes 3–6 s on a good day).
    public var requestTimeout: Duration
    /// Keep-alive connections to each Apple host kept open between requests. A worker sets its
    /// concurrency: each verification in flight holds a connection, and answers come back in waves,
    /// so a smaller pool closes the surplus of every wave and connects (TLS included) again on the next.
    public var idleConnectionsPerHost: Int

    public init(productionURL: URL = Self.appleProductionURL, sandboxURL: URL = Self.appleSandboxURL,
                sharedSecret: String? = nil, allowSandbox: Bool = false, bundleID: String,
                requestTimeout: Duration = .seconds(15), idleConnectionsPerHost: Int = 4_096) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.sharedSecret = sharedSecret
        self.allowSandbox = allowSandbox
        self.bundleID = bundleID
        self.requestTimeout = requestTimeout
        self.idleConnectionsPerHost = max(1, idleConnectionsPerHost)
    }

    /// Checks what can be checked before any work starts; errors name the environment setting.
    public func validate() throws(ReceiptVerifierConfigurationError) {
        if bundleID.trimmingCharacters(in: .whitespaces).isEmpty { throw .missingBundleID }
        try Self.check(productionURL, setting: "APPLE_VERIFY_RECEIPT_URL")
        try Self.check(sandboxURL, setting: "APPLE_VERIFY_RECEIPT_SANDBOX_URL")
        if requestTimeout <= .zero { throw .nonPositiveTimeout }
    }

    private static func check(_ url: URL, setting: String) throws(ReceiptVerifierConfigurationError) {
        guard let host = url.host, !host.isEmpty else { throw .invalidURL(setting: setting) }
        switch url.scheme?.lowercased() {
        case "https": return
        case "http": if !isLoopbackHost(host) { throw .insecureURL(setting: setting, host: host) }
        default: throw .invalidURL(setting: setting)
        }
    }
}

public enum ReceiptVerifierConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    case missingBundleID
    case invalidURL(setting: String)
    /// Plain http to a non-loopback host would put the shared secret and receipts on the wire.
    case insecureURL(setting: String, host: String)
    case nonPositiveTimeout

    public var description: String {
        switch self {
        case .missingBundleID: "APPLE_BUNDLE_ID is required"
        case .invalidURL(let setting): "\(setting) must be an http(s) URL with a host"
        case .insecureURL(let setting, let host): "\(setting): plain http is only allowed to loopback hosts, not \(host); use https"
        case .nonPositiveTimeout: "APPLE_TIMEOUT_SECONDS must be greater than zero"
        }
    }
}
