/// Why a StoreKit 2 JWS was refused. `reason` is a stable machine word (for `last_error` and
/// metrics); `detail` is for humans. Neither contains the JWS or any key material.
public struct StoreKitVerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, CaseIterable {
        case jwsMalformed = "jws_malformed"
        case badAlg = "bad_alg"
        case x5cMissing = "x5c_missing"
        case x5cLength = "x5c_length"
        case chainInvalid = "chain_invalid"
        case leafOIDMissing = "leaf_oid_missing"
        case intermediateOIDMissing = "intermediate_oid_missing"
        case signatureInvalid = "signature_invalid"
        case payloadInvalid = "payload_invalid"
        case bundleMismatch = "bundle_mismatch"
        case environmentMismatch = "environment_mismatch"
        case appIDMismatch = "app_id_mismatch"

        /// The job outcome (state `failed`) this failure leads to.
        public var outcome: String {
            switch self {
            case .bundleMismatch, .appIDMismatch: "wrong_bundle"
            case .environmentMismatch: "wrong_environment"
            default: "invalid_signature"
            }
        }
    }

    public var reason: Reason
    public var detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var outcome: String { reason.outcome }
    /// "bundle_mismatch: bundleId com.other is not com.example.game" — suitable for `last_error`.
    public var description: String { "\(reason.rawValue): \(detail)" }
}
