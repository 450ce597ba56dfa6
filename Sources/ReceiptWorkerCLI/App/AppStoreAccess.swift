import AppStore
import Observability
import Postgres
import Settlement

/// What the one-shot App Store commands (`notifications`, `support`) need: the database, the App
/// Store Server API behind the fleet limit, and StoreKit verification, all from the checked settings.
struct AppStoreAccess {
    static let settings = Settings.database + [
        Settings.bundleID, Settings.appID, Settings.allowSandbox, Settings.rootCerts, Settings.appStoreAPIURL,
        Settings.appStoreAPISandboxURL, Settings.issuerID, Settings.keyID, Settings.privateKeyFile, Settings.appleTimeout,
        Settings.appStoreRatePerSecond, Settings.appStoreRatePerHour,
    ] + Settings.logging

    let client: PostgresClient
    let api: AppStoreServerAPIClient
    let signedData: StoreKitSignedDataVerifier
    let metrics: SettlementMetrics

    /// Runs `body` with the access, then closes the database pool whatever happened.
    static func with<T: Sendable>(_ runtime: Runtime, applicationName: String, _ body: (AppStoreAccess) async throws -> T) async throws -> T {
        let access = try await open(runtime, applicationName: applicationName)
        do {
            let result = try await body(access)
            await access.client.close()
            return result
        } catch {
            await access.client.close()
            throw error
        }
    }

    private static func open(_ runtime: Runtime, applicationName: String) async throws -> AppStoreAccess {
        let options = runtime.options
        guard let bundleID = options.string(Settings.bundleID) else {
            throw UsageError("APPLE_BUNDLE_ID is not set (or pass --bundle-id): Apple's answers are checked against it")
        }
        let signedData = try SettlementWiring.signedDataVerifier(options, bundleID: bundleID)
        let client = try await runtime.connectDatabase(maxConnections: 2, applicationName: applicationName)
        let registry = MetricsRegistry()
        guard let api = try SettlementWiring.serverAPIClient(
            options, bundleID: bundleID, observer: AppleRequestMetrics(registry: registry, logger: runtime.logger),
            limiter: PostgresRateLimiter(client: client, limit: SettlementWiring.rateLimit(options))) else {
            await client.close()
            throw UsageError("APPSTORE_ISSUER_ID, APPSTORE_KEY_ID and APPSTORE_PRIVATE_KEY_FILE are required (App Store Server API credentials)")
        }
        return AppStoreAccess(client: client, api: api, signedData: signedData, metrics: SettlementMetrics(registry: registry))
    }
}
