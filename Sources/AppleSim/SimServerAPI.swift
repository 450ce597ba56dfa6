import AppStore
import Foundation
import Synchronization

/// The simulator's App Store Server API: Get Transaction Info for transactions it has been told
/// about, signed by its `SimSigningChain`, behind ES256 bearer-token checks like Apple's.
///
/// By default it generates its own API key pair: the worker gets the private half through
/// `writeAPIPrivateKey(to:)` (for `APPSTORE_PRIVATE_KEY_FILE`) and the chain's root through
/// `signingChain.writeRootPEM(to:)` (for `APPLE_ROOT_CERTS`).
public final class SimServerAPI: Sendable {
    public static let defaultKeyID = "SIMKEY0001"
    public static let defaultIssuerID = "00000000-0000-0000-0000-00000000a001"

    public let signingChain: SimSigningChain
    /// Secret; only for writing a key file or signing tokens in tests.
    public let apiPrivateKey: ES256PrivateKey

    private struct Credentials {
        var publicKey: ES256PublicKey
        var keyID: String?
        var issuerID: String?
        var bundleID: String?
    }

    private struct State {
        var credentials: Credentials
        /// Keyed by environment then transaction id.
        var transactions: [StoreKitEnvironment: [String: JWSTransactionPayload]] = [:]
        var rateLimited: (remaining: Int, retryAfterMilliseconds: Int64)?
        var requests: [String: Int] = [:]
    }

    private let state: Mutex<State>

    public init(signingChain: SimSigningChain? = nil) throws(CryptoError) {
        let chain: SimSigningChain
        if let signingChain { chain = signingChain } else { chain = try SimSigningChain() }
        self.signingChain = chain
        apiPrivateKey = try ES256PrivateKey.generate()
        state = Mutex(State(credentials: Credentials(publicKey: try apiPrivateKey.publicKey, keyID: Self.defaultKeyID,
                                                     issuerID: Self.defaultIssuerID, bundleID: nil)))
    }

    /// The simulator's default instance; key generation fails only if libcrypto itself is broken.
    static func standard() -> SimServerAPI {
        do {
            return try SimServerAPI()
        } catch {
            fatalError("apple-sim cannot generate its signing keys: \(error)")
        }
    }

    /// Trust another API key (e.g. the public half of the worker's configured .p8). nil
    /// expectations accept any `kid` / `iss` / `bid`.
    public func trustAPIKey(_ publicKey: ES256PublicKey, keyID: String? = nil, issuerID: String? = nil, bundleID: String? = nil) {
        state.withLock { $0.credentials = Credentials(publicKey: publicKey, keyID: keyID, issuerID: issuerID, bundleID: bundleID) }
    }

    /// Writes the API private key as PKCS#8 PEM, readable by the owner only.
    public func writeAPIPrivateKey(to path: String) throws {
        let pem = try apiPrivateKey.pkcs8PEM()
        guard FileManager.default.createFile(atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CryptoError("write API key", reason: "cannot create \(path)")
        }
    }

    /// Makes the transaction known to Get Transaction Info, in the environment its payload names
    /// (Sandbox ones answer only on the sandbox base URL).
    public func register(_ payload: JWSTransactionPayload) {
        let environment = payload.environment.flatMap(StoreKitEnvironment.init(rawValue:)) ?? .production
        guard let id = payload.transactionId else { return }
        state.withLock { $0.transactions[environment, default: [:]][id] = payload }
    }

    /// Registers the transaction and returns it signed, as an app would upload it.
    public func mintTransaction(_ payload: JWSTransactionPayload) throws(CryptoError) -> String {
        register(payload)
        var signed = payload
        signed.signedDate = signed.signedDate ?? Date()
        return try signingChain.signTransaction(signed)
    }

    /// The next `count` API requests get 429 with Apple's Retry-After (UNIX time in ms).
    public func rateLimitNext(_ count: Int, retryAfterMilliseconds: Int64) {
        state.withLock { $0.rateLimited = (count, retryAfterMilliseconds) }
    }

    /// Requests answered so far by "environment:status" (e.g. "Production:404").
    public var requestCounts: [String: Int] { state.withLock { $0.requests } }

    // MARK: Get Transaction Info

    enum Answer {
        case signed(JWSTransactionPayload)
        case status(Int, errorCode: Int?, headers: [(String, String)])
    }

    func getTransactionInfo(id: String, authorization: String?, environment: StoreKitEnvironment, now: Date = Date()) -> Answer {
        let answer = state.withLock { s -> Answer in
            if let limit = s.rateLimited, limit.remaining > 0 {
                s.rateLimited = limit.remaining > 1 ? (limit.remaining - 1, limit.retryAfterMilliseconds) : nil
                return .status(429, errorCode: 4290000, headers: [("Retry-After", String(limit.retryAfterMilliseconds))])
            }
            guard let authorization, authorization.hasPrefix("Bearer "),
                  (try? AppStoreJWT.verify(String(authorization.dropFirst(7)), publicKey: s.credentials.publicKey, now: now,
                                           expectedKeyID: s.credentials.keyID, expectedIssuer: s.credentials.issuerID,
                                           expectedBundleID: s.credentials.bundleID)) != nil else {
                return .status(401, errorCode: nil, headers: [])  // Apple answers 401 with no body
            }
            guard id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }), !id.isEmpty else {
                return .status(400, errorCode: 4000006, headers: [])
            }
            guard let payload = s.transactions[environment]?[id] else { return .status(404, errorCode: 4040010, headers: []) }
            return .signed(payload)
        }
        let status = if case .status(let code, _, _) = answer { code } else { 200 }
        state.withLock { $0.requests["\(environment.rawValue):\(status)", default: 0] += 1 }
        return answer
    }
}
