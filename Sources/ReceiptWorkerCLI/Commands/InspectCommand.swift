import AppStore
import AppleSim
import Foundation
import Observability
import StoreKitCrypto

/// `receipt-worker inspect FILE|-`: what support runs on a JWS or a receipt a buyer sent:
/// decodes it, runs the same checks the worker runs, and says which one failed and why.
enum InspectCommand {
    static let spec = CommandSpec(
        name: "inspect",
        summary: "Decode and verify a StoreKit 2 JWS (transaction or notification) or an apple-sim receipt; print each check.",
        usage: "inspect FILE|- [--bundle-id ID] [--root-certs FILES] [--allow-sandbox]",
        settings: [Settings.bundleID, Settings.appID, Settings.allowSandbox, Settings.rootCerts] + Settings.logging,
        positionals: 1...1)

    /// The verifier's checks in the order it runs them, each with the reasons that stop there.
    static let steps: [(name: String, reasons: [StoreKitVerificationError.Reason])] = [
        ("compact JWS", [.jwsMalformed]), ("alg is ES256", [.badAlg]), ("x5c has 3 certificates", [.x5cMissing, .x5cLength]),
        ("chain to a trusted root, valid at signedDate", [.chainInvalid]),
        ("leaf has OID 1.2.840.113635.100.6.11.1", [.leafOIDMissing]),
        ("intermediate has OID 1.2.840.113635.100.6.2.1", [.intermediateOIDMissing]),
        ("signature over the leaf key", [.signatureInvalid]), ("payload decodes", [.payloadInvalid]),
        ("bundle id", [.bundleMismatch]), ("environment", [.environmentMismatch]), ("app id (production notifications)", [.appIDMismatch]),
    ]

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let source = runtime.options.positionals[0]
        let data: Data?
        if source == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = FileManager.default.contents(atPath: source)
        }
        guard let data, let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            throw UsageError("inspect: cannot read \(source) (or it is empty / not UTF-8)")
        }
        if text.split(separator: ".", omittingEmptySubsequences: false).count == 3 {
            return try inspectJWS(text, runtime.options)
        }
        return inspectReceipt(text)
    }

    private static func inspectJWS(_ text: String, _ options: CommandLineOptions) throws -> Int32 {
        if let jws = try? JWSCompact.parse(text) {
            Console.print("JWS header: alg=\(jws.header.alg ?? "-") x5c=\(jws.header.x5c?.count ?? 0) certificate(s)")
            for (index, encoded) in (jws.header.x5c ?? []).enumerated() {
                if let der = Data(base64Encoded: encoded), let certificate = try? X509Certificate(der: Array(der)) {
                    let validity = "\(certificate.notBefore.map(Console.timestamp) ?? "?") .. \(certificate.notAfter.map(Console.timestamp) ?? "?")"
                    Console.print("  [\(index)] \(certificate.subject)  valid \(validity)")
                }
            }
            if let object = try? JSONSerialization.jsonObject(with: Data(jws.payload)),
               let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]) {
                Console.print("payload:\n" + String(decoding: pretty, as: UTF8.self))
            }
        }
        let isNotification = text.split(separator: ".").dropFirst().first
            .flatMap { JWSBase64URL.decode(String($0)) }.map { String(decoding: $0, as: UTF8.self).contains("\"notificationType\"") } ?? false
        let bundle = options.string(Settings.bundleID)
        let roots: [X509Certificate]
        do {
            roots = try StoreKitTrustedRoots.load(appleRootCerts: options.string(Settings.rootCerts))
        } catch {
            throw UsageError("APPLE_ROOT_CERTS (--root-certs): \(error)")
        }
        let verifier = try StoreKitSignedDataVerifier(
            configuration: StoreKitVerifierConfiguration(bundleID: bundle ?? "", appAppleID: options.string(Settings.appID).flatMap { Int64($0) },
                                                         allowSandbox: options.bool(Settings.allowSandbox)),
            trustedRoots: roots)
        var failure: StoreKitVerificationError?
        do {
            if isNotification { _ = try verifier.verifyNotification(text) } else { _ = try verifier.verifyTransaction(text) }
        } catch {
            failure = error
        }
        // Without APPLE_BUNDLE_ID the bundle check fails by construction: say so instead.
        if bundle == nil, failure?.reason == .bundleMismatch { failure = nil }
        Console.print("checks (\(isNotification ? "notification" : "transaction")):")
        var reached = true
        for step in steps {
            let mark: String
            if !reached {
                mark = "not reached"
            } else if let failure, step.reasons.contains(failure.reason) {
                mark = "FAILED: \(failure.description)"
                reached = false
            } else if step.reasons.contains(.bundleMismatch) && bundle == nil {
                mark = "not checked (set APPLE_BUNDLE_ID or --bundle-id)"
            } else {
                mark = "ok"
            }
            Console.print("  \(step.name): \(mark)")
        }
        Console.print(failure.map { "result: rejected, job outcome would be \($0.outcome)" } ?? "result: verified")
        return failure == nil ? 0 : 1
    }

    private static func inspectReceipt(_ text: String) -> Int32 {
        guard let receipt = SimReceipt.parse(base64: text) else {
            Console.print("not a JWS and not an apple-sim receipt: a real App Store receipt (PKCS#7) can only be read by Apple's verifyReceipt")
            return 1
        }
        Console.print("apple-sim receipt: bundle_id=\(receipt.bundleID) environment=\(receipt.environment.rawValue)"
                      + (receipt.forceStatus.map { " force_status=\($0)" } ?? ""))
        for transaction in receipt.transactions {
            Console.print("  transaction \(transaction.transactionID) product=\(transaction.productID) quantity=\(transaction.quantity ?? 1)"
                          + (transaction.cancellationDateMs != nil ? " CANCELLED (refunded)" : "")
                          + (transaction.appAccountToken.map { " app_account_token=\($0)" } ?? ""))
        }
        return 0
    }

}
