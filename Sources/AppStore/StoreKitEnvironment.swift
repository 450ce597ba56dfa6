/// The `environment` values of StoreKit 2 payloads. Only production and sandbox exist on
/// Apple's servers; Xcode and LocalTesting come from local StoreKit configuration files.
public enum StoreKitEnvironment: String, Sendable, Codable, CaseIterable, Hashable {
    case production = "Production"
    case sandbox = "Sandbox"
    case xcode = "Xcode"
    case localTesting = "LocalTesting"

    /// The ledger's spelling: anything but Production cost nothing, so it is booked as Sandbox.
    public var appleEnvironment: AppleEnvironment { self == .production ? .production : .sandbox }
}
