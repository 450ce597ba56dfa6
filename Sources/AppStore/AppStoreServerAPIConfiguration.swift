import Foundation
import HTTP
import StoreKitCrypto

/// Credentials and endpoints for the App Store Server API (`APPSTORE_*` settings). The private
/// key prints as `<redacted>`; tokens are minted per request and never stored or logged.
public struct AppStoreServerAPIConfiguration: Sendable {
    public static let appleProductionURL = URL(string: "https://api.storekit.itunes.apple.com")!
    public static let appleSandboxURL = URL(string: "https://api.storekit-sandbox.itunes.apple.com")!

    /// Bases: requests go to `{base}/inApps/v1/...`.
    public var productionURL: URL
    public var sandboxURL: URL
    public var issuerID: String
    public var keyID: String
    public var bundleID: String
    public var privateKey: ES256PrivateKey
    public var requestTimeout: Duration
    /// Seconds each token is valid (Apple allows at most 3600).
    public var tokenLifetime: TimeInterval
    /// Ask the sandbox when production answers 4040010 (transaction id not found).
    public var sandboxFallback: Bool
    /// How long a request may wait for its slot under the fleet limit; past that it is deferred
    /// (a job retries later instead of holding its lease while it waits).
    public var rateLimitMaxWait: Duration

    public init(productionURL: URL = Self.appleProductionURL, sandboxURL: URL = Self.appleSandboxURL,
                issuerID: String, keyID: String, bundleID: String, privateKey: ES256PrivateKey,
                requestTimeout: Duration = .seconds(15), tokenLifetime: TimeInterval = 300, sandboxFallback: Bool = true,
                rateLimitMaxWait: Duration = .seconds(20)) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.issuerID = issuerID
        self.keyID = keyID
        self.bundleID = bundleID
        self.privateKey = privateKey
        self.requestTimeout = requestTimeout
        self.tokenLifetime = tokenLifetime
        self.sandboxFallback = sandboxFallback
        self.rateLimitMaxWait = rateLimitMaxWait
    }

    /// Errors name the setting, never a value that could be secret.
    public func validate() throws(AppStoreServerAPIConfigurationError) {
        for (value, setting) in [(issuerID, "APPSTORE_ISSUER_ID"), (keyID, "APPSTORE_KEY_ID"), (bundleID, "APPLE_BUNDLE_ID")]
        where value.trimmingCharacters(in: .whitespaces).isEmpty {
            throw .missing(setting: setting)
        }
        for (url, setting) in [(productionURL, "APPSTORE_API_URL"), (sandboxURL, "APPSTORE_API_SANDBOX_URL")] {
            guard let host = url.host, !host.isEmpty else { throw .invalidURL(setting: setting) }
            switch url.scheme?.lowercased() {
            case "https": break
            case "http": if !isLoopbackHost(host) { throw .invalidURL(setting: setting) }  // the bearer token must not cross a network in clear
            default: throw .invalidURL(setting: setting)
            }
        }
        guard tokenLifetime > 0, tokenLifetime <= AppStoreJWT.maximumLifetime else { throw .tokenLifetime }
        guard requestTimeout > .zero else { throw .nonPositiveTimeout }
    }
}

public enum AppStoreServerAPIConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    case missing(setting: String)
    case invalidURL(setting: String)
    case tokenLifetime
    case nonPositiveTimeout

    public var description: String {
        switch self {
        case .missing(let setting): "\(setting) is required for the App Store Server API"
        case .invalidURL(let setting): "\(setting) must be an https URL (plain http only to loopback hosts)"
        case .tokenLifetime: "the App Store Server API token lifetime must be between 0 and 3600 seconds"
        case .nonPositiveTimeout: "APPLE_TIMEOUT_SECONDS must be greater than zero"
        }
    }
}
