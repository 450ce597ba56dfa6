import Foundation
import HTTP
import StoreKitCrypto

/// Credentials for the App Store Connect API (`APPSTORECONNECT_*` settings): a team key with the
/// Sales role, distinct from the in-app purchase key of the App Store Server API.
public struct AppStoreConnectConfiguration: Sendable {
    public static let appleURL = URL(string: "https://api.appstoreconnect.apple.com")!

    /// Base: requests go to `{base}/v1/salesReports`.
    public var baseURL: URL
    public var issuerID: String
    public var keyID: String
    public var vendorNumber: String
    public var privateKey: ES256PrivateKey
    public var requestTimeout: Duration

    public init(baseURL: URL = Self.appleURL, issuerID: String, keyID: String, vendorNumber: String, privateKey: ES256PrivateKey,
                requestTimeout: Duration = .seconds(60)) {
        self.baseURL = baseURL
        self.issuerID = issuerID
        self.keyID = keyID
        self.vendorNumber = vendorNumber
        self.privateKey = privateKey
        self.requestTimeout = requestTimeout
    }

    /// Errors name the setting, never a value.
    public func validate() throws(AppStoreServerAPIConfigurationError) {
        for (value, setting) in [(issuerID, "APPSTORECONNECT_ISSUER_ID"), (keyID, "APPSTORECONNECT_KEY_ID"),
                                 (vendorNumber, "APPSTORECONNECT_VENDOR_NUMBER")]
        where value.trimmingCharacters(in: .whitespaces).isEmpty {
            throw .missing(setting: setting)
        }
        guard let host = baseURL.host, !host.isEmpty else { throw .invalidURL(setting: "APPSTORECONNECT_API_URL") }
        switch baseURL.scheme?.lowercased() {
        case "https": break
        case "http": if !isLoopbackHost(host) { throw .invalidURL(setting: "APPSTORECONNECT_API_URL") }
        default: throw .invalidURL(setting: "APPSTORECONNECT_API_URL")
        }
        guard requestTimeout > .zero else { throw .nonPositiveTimeout }
    }
}
