/// Apple's spelling of the two App Store environments; the raw values go into the ledger as-is.
public enum AppleEnvironment: String, Sendable, Codable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
}
