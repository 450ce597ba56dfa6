import AppStore
import Foundation
import JSONWire
import StoreKitCrypto
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
    /// What was sold and refunded, for `GET /v1/salesReports` (see `SimServerAPI+SalesReports`).
    public let salesBook = SimSalesBook()

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
        var faults: [SimAPIFault] = []
        var requests: [String: Int] = [:]
        var counter = SimRequestCounter()
        var retryAfterLog = SimRetryAfterLog()
        var history: [StoreKitEnvironment: SimNotificationHistory] = [:]
        /// Apple order id → transaction ids (production).
        var orders: [String: [String]] = [:]
        var consumption: [SimConsumptionAnswer] = []
        /// The App Store Connect API's team key; nil: the server API key and issuer (no `bid`).
        var connectCredentials: Credentials?
        /// The vendor number Sales and Trends answers for; nil: any.
        var vendorNumber: String?
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

    /// Trust a separate App Store Connect API team key (Sales and Trends) and vendor number.
    public func trustConnectAPIKey(_ publicKey: ES256PublicKey, keyID: String? = nil, issuerID: String? = nil, vendorNumber: String? = nil) {
        state.withLock {
            $0.connectCredentials = Credentials(publicKey: publicKey, keyID: keyID, issuerID: issuerID, bundleID: nil)
            $0.vendorNumber = vendorNumber
        }
    }

    /// The App Store Connect API's front door: scheduled faults, then the bearer token checked as Apple
    /// checks a team key's (aud appstoreconnect-v1, at most 20 minutes). nil: go on.
    func connectGate(authorization: String?, vendorNumber: String?, now: Date = Date()) -> (status: Int, code: String)? {
        state.withLock { s -> (status: Int, code: String)? in
            let credentials = s.connectCredentials ?? s.credentials
            guard let authorization, authorization.hasPrefix("Bearer "),
                  (try? AppStoreConnectJWT.verify(String(authorization.dropFirst(7)), publicKey: credentials.publicKey, now: now,
                                                  expectedKeyID: credentials.keyID, expectedIssuer: credentials.issuerID)) != nil else {
                return (401, "NOT_AUTHORIZED")
            }
            if let expected = s.vendorNumber, vendorNumber != expected { return (403, "FORBIDDEN_ERROR") }
            return nil
        }
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
        inject(SimAPIFault(status: 429, retryAfter: String(retryAfterMilliseconds), count: count))
    }

    /// Schedules answers that fail (429 with `Retry-After`, 5xx) for upcoming API requests.
    public func inject(_ fault: SimAPIFault) {
        state.withLock { $0.faults.append(fault) }
    }

    /// Requests answered so far by "environment:status" (e.g. "Production:404").
    public var requestCounts: [String: Int] { state.withLock { $0.requests } }
    /// Every App Store Server API request that arrived, by family and by wall-clock second.
    public var apiRequestsTotal: Int { state.withLock { $0.counter.total } }
    public var maxAPIRequestsPerSecond: Int { state.withLock { $0.counter.maxPerSecond } }
    var apiStatsJSON: [String: Any] {
        state.withLock { s in s.counter.json.merging(["after_429": s.retryAfterLog.json]) { $1 } }
    }
    /// What followed each 429 apple-sim answered: requests that arrived during its Retry-After (Apple
    /// would count them against us) and how long until the next request came.
    public var retryAfterReports: [SimRetryAfterLog.Report] { state.withLock { $0.retryAfterLog.reports } }

    /// A notification the simulated App Store sent at `sentAt`; `delivered: false` means it never
    /// reached the developer's server (Get Notification History with onlyFailures lists it).
    public func recordNotification(_ signedPayload: String, sentAt: Date = Date(), delivered: Bool,
                                   environment: StoreKitEnvironment = .production) {
        state.withLock { $0.history[environment, default: SimNotificationHistory()].append(.init(signedPayload: signedPayload, sentAt: sentAt, delivered: delivered)) }
    }

    /// An Apple order id (the one on the buyer's e-mailed receipt) and its transactions (production).
    public func registerOrder(_ orderID: String, transactions: [JWSTransactionPayload]) {
        for transaction in transactions { register(transaction) }
        state.withLock { $0.orders[orderID] = transactions.compactMap(\.transactionId) }
    }

    /// Send Consumption Information requests accepted so far, oldest first.
    public var consumptionAnswers: [SimConsumptionAnswer] { state.withLock { $0.consumption } }

    // MARK: Get Transaction Info

    enum Answer {
        case signed(JWSTransactionPayload)
        case status(Int, error: SimAPIError?, headers: [(String, String)])

        static func refused(_ error: SimAPIError) -> Answer { .status(error.status, error: error, headers: []) }
    }

    /// What every API request goes through first, as Apple's front door does: the per-second count,
    /// scheduled faults, then the bearer token. nil: go on to the endpoint.
    func gate(_ family: AppStoreAPIFamily, authorization: String?, now: Date = Date()) -> Answer? {
        state.withLock { s -> Answer? in
            s.counter.record(family.rawValue, at: now)
            s.retryAfterLog.arrived(at: now)
            if let index = s.faults.firstIndex(where: { $0.family == nil || $0.family == family }) {
                if s.faults[index].skip > 0 {
                    s.faults[index].skip -= 1
                } else {
                    let fault = s.faults[index]
                    s.faults[index].count -= 1
                    if s.faults[index].count <= 0 { s.faults.remove(at: index) }
                    let retryAfter = fault.retryAfterHeader(at: now)
                    if fault.status == 429 { s.retryAfterLog.answered429(at: now, retryAfter: retryAfter) }
                    return .status(fault.status, error: fault.error, headers: retryAfter.map { [("Retry-After", $0)] } ?? [])
                }
            }
            guard let authorization, authorization.hasPrefix("Bearer "),
                  (try? AppStoreJWT.verify(String(authorization.dropFirst(7)), publicKey: s.credentials.publicKey, now: now,
                                           expectedKeyID: s.credentials.keyID, expectedIssuer: s.credentials.issuerID,
                                           expectedBundleID: s.credentials.bundleID)) != nil else {
                return .status(401, error: nil, headers: [])  // Apple answers 401 with no body
            }
            return nil
        }
    }

    func getTransactionInfo(id: String, authorization: String?, environment: StoreKitEnvironment, now: Date = Date()) -> Answer {
        let answer = gate(.transactionInfo, authorization: authorization, now: now) ?? state.withLock { s -> Answer in
            guard Self.isValidID(id) else { return .refused(.invalidTransactionID) }
            guard let payload = s.transactions[environment]?[id] else { return .refused(.transactionIDNotFound) }
            return .signed(payload)
        }
        if case .signed(let payload) = answer, environment == .production { recordSale(payload) }
        let status = if case .status(let code, _, _) = answer { code } else { 200 }
        state.withLock { $0.requests["\(environment.rawValue):\(status)", default: 0] += 1 }
        return answer
    }

    /// A transaction answered as paid (or refunded) goes into the sales report.
    func recordSale(_ payload: JWSTransactionPayload) {
        guard let id = payload.transactionId, let product = payload.productId else { return }
        salesBook.record(transactionID: id, productID: product, quantity: payload.quantity ?? 1,
                         purchaseDate: payload.purchaseDate ?? Date(), refundDate: payload.revocationDate)
    }

    static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.allSatisfy { $0.isLetter || $0 == "-" || $0 == "_" || $0.isNumber }
    }

    // MARK: Get Notification History, Send Consumption Information, Look Up Order ID

    func notificationHistory(_ body: [UInt8], token: String?, authorization: String?,
                             environment: StoreKitEnvironment, now: Date = Date()) -> SimHistoryAnswer {
        if let refused = gate(.notificationHistory, authorization: authorization, now: now) { return .refused(refused) }
        let request: NotificationHistoryRequest
        let checked = SimRequestShape.notificationHistory.check(body).flatMap {
            Self.historyRequest($0, oldest: now.addingTimeInterval(-NotificationHistoryRequest.retention(environment.appleEnvironment)))
        }
        switch checked {
        case .failure(let error): return .refused(.refused(error))
        case .success(let valid): request = valid
        }
        switch state.withLock({ $0.history[environment, default: SimNotificationHistory()] }).page(request, token: token) {
        case .page(let page): return .page(page)
        case .invalidToken: return .refused(.refused(.invalidPaginationToken))
        }
    }

    /// Apple's checks of a well-typed `NotificationHistoryRequest`: a span that ends after it starts,
    /// starts no earlier than `oldest` (what Apple keeps), and one filter at most.
    static func historyRequest(_ members: [String: JSONValue], oldest: Date) -> Result<NotificationHistoryRequest, SimAPIError> {
        guard let start = SimRequestShape.date(members["startDate"]), let end = SimRequestShape.date(members["endDate"]) else {
            return .failure(.generalBadRequest)
        }
        guard start < end else { return .failure(.startDateAfterEndDate) }
        guard start >= oldest else { return .failure(.startDateTooFarInPast) }
        let type = members["notificationType"]?.stringValue, subtype = members["notificationSubtype"]?.stringValue
        let transactionID = members["transactionId"]?.stringValue
        guard type == nil || transactionID == nil else { return .failure(.multipleFiltersSupplied) }
        guard subtype == nil || type != nil else { return .failure(.invalidNotificationType) }
        var onlyFailures: Bool?
        if case .bool(let flag)? = members["onlyFailures"] { onlyFailures = flag }
        return .success(NotificationHistoryRequest(startDate: start, endDate: end, notificationType: type, notificationSubtype: subtype,
                                                   transactionId: transactionID, onlyFailures: onlyFailures))
    }

    func consumption(_ body: [UInt8], transactionID: String, authorization: String?, environment: StoreKitEnvironment) -> Answer {
        if let refused = gate(.consumption, authorization: authorization) { return refused }
        switch SimRequestShape.consumption.check(body).flatMap(SimConsumptionAnswer.validate) {
        case .failure(let error): return .refused(error)
        case .success(let request):
            return state.withLock { s -> Answer in
                guard Self.isValidID(transactionID) else { return .refused(.invalidTransactionID) }
                guard s.transactions[environment]?[transactionID] != nil else { return .refused(.transactionIDNotFound) }
                s.consumption.append(SimConsumptionAnswer(transactionID: transactionID, request: request, receivedAt: Date()))
                return .status(202, error: nil, headers: [])
            }
        }
    }

    /// Get Transaction History (v2): the customer behind `id` (apple-sim's customer is the transactions'
    /// `appAccountToken`; without one, the transaction alone), oldest purchase first, in one page.
    func transactionHistory(_ id: String, authorization: String?, environment: StoreKitEnvironment) -> SimOrderAnswer {
        if let refused = gate(.transactionHistory, authorization: authorization) { return .refused(refused) }
        let found = state.withLock { s -> [JWSTransactionPayload]? in
            guard Self.isValidID(id) else { return nil }
            guard let known = s.transactions[environment]?[id] else { return [] }
            guard let customer = known.appAccountToken else { return [known] }
            return s.transactions[environment, default: [:]].values.filter { $0.appAccountToken == customer }
                .sorted { ($0.purchaseDate ?? .distantPast, $0.transactionId ?? "") < ($1.purchaseDate ?? .distantPast, $1.transactionId ?? "") }
        }
        guard let found else { return .refused(.refused(.invalidTransactionID)) }
        guard !found.isEmpty else { return .refused(.refused(.transactionIDNotFound)) }
        return .found(found)
    }

    func lookUpOrder(_ orderID: String, authorization: String?) -> SimOrderAnswer {
        if let refused = gate(.orderLookup, authorization: authorization) { return .refused(refused) }
        let payloads = state.withLock { s -> [JWSTransactionPayload]? in
            s.orders[orderID].map { ids in ids.compactMap { s.transactions[.production]?[$0] } }
        }
        return .found(payloads ?? [])
    }
}
