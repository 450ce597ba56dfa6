import Foundation

/// Get Transaction History (v2)'s answer: `HistoryResponse` (a page of signed transactions).
public struct TransactionHistoryResponse: Codable, Sendable, Equatable {
    public var revision: String?
    public var hasMore: Bool
    public var bundleId: String?
    public var environment: String?
    public var signedTransactions: [String]

    public init(revision: String?, hasMore: Bool, bundleId: String?, environment: String?, signedTransactions: [String]) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
}
