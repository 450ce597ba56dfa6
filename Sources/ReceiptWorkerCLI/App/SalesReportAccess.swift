import AppStore
import Foundation
import StoreKitCrypto

/// The App Store Connect API client for sales reports, from the `APPSTORECONNECT_*` settings (all required).
enum SalesReportAccess {
    static func client(_ options: CommandLineOptions) throws -> SalesReportClient {
        for setting in [Settings.connectIssuerID, Settings.connectKeyID, Settings.connectPrivateKeyFile, Settings.connectVendorNumber]
        where options.string(setting) == nil {
            throw UsageError("\(setting.env) (--\(setting.flag)) is not set: sales reports need the App Store Connect API team key and vendor number")
        }
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pemFile: try options.require(Settings.connectPrivateKeyFile))
        } catch {
            throw UsageError("APPSTORECONNECT_PRIVATE_KEY_FILE (--appstoreconnect-private-key-file): not a readable EC P-256 private key (.p8)")
        }
        guard let url = URL(string: try options.require(Settings.connectAPIURL)) else {
            throw UsageError("APPSTORECONNECT_API_URL is not a URL")
        }
        let configuration = AppStoreConnectConfiguration(
            baseURL: url, issuerID: try options.require(Settings.connectIssuerID), keyID: try options.require(Settings.connectKeyID),
            vendorNumber: try options.require(Settings.connectVendorNumber), privateKey: key,
            requestTimeout: max(options.duration(Settings.appleTimeout), .seconds(60)))  // a day's report can be large
        do {
            return try SalesReportClient(configuration: configuration)
        } catch {
            throw UsageError("\(error)")
        }
    }
}
