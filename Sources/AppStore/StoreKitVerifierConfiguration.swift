/// What a verified StoreKit 2 payload must say, besides being signed by Apple.
public struct StoreKitVerifierConfiguration: Sendable {
    public var bundleID: String
    /// `APPLE_APP_ID`: required to accept production notifications (their `appAppleId` must match).
    public var appAppleID: Int64?
    /// Payload environments accepted; anything else is `environment_mismatch`.
    public var acceptedEnvironments: Set<StoreKitEnvironment>
    /// Verified chains kept (keyed by the exact x5c strings) so bursts skip chain building; 0 disables.
    public var chainCacheCapacity: Int
    public var chainCacheLifetime: Duration

    /// Production only, plus Sandbox when `allowSandbox` (`APPLE_ALLOW_SANDBOX`). Xcode and
    /// LocalTesting payloads are never accepted this way: they are signed by no Apple server.
    public init(bundleID: String, appAppleID: Int64? = nil, allowSandbox: Bool = false,
                chainCacheCapacity: Int = 32, chainCacheLifetime: Duration = .seconds(300)) {
        self.init(bundleID: bundleID, appAppleID: appAppleID,
                  acceptedEnvironments: allowSandbox ? [.production, .sandbox] : [.production],
                  chainCacheCapacity: chainCacheCapacity, chainCacheLifetime: chainCacheLifetime)
    }

    public init(bundleID: String, appAppleID: Int64?, acceptedEnvironments: Set<StoreKitEnvironment>,
                chainCacheCapacity: Int = 32, chainCacheLifetime: Duration = .seconds(300)) {
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.acceptedEnvironments = acceptedEnvironments
        self.chainCacheCapacity = chainCacheCapacity
        self.chainCacheLifetime = chainCacheLifetime
    }
}
