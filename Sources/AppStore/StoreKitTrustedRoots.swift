import Foundation
import StoreKitCrypto

/// The certificates StoreKit chains must end in.
public enum StoreKitTrustedRoots {
    /// Apple Root CA - G3 from the bundled constant.
    public static func appleDefault() throws(CryptoError) -> [X509Certificate] {
        [try X509Certificate(pem: AppleRootCertificate.appleRootCAG3PEM)]
    }

    /// `APPLE_ROOT_CERTS`: a comma-separated list of PEM or DER files (a PEM file may hold several
    /// certificates). nil or blank means the bundled Apple root. Errors name the file, never its bytes.
    public static func load(appleRootCerts setting: String?) throws(CryptoError) -> [X509Certificate] {
        let paths = (setting ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard !paths.isEmpty else { return try appleDefault() }
        var roots: [X509Certificate] = []
        for path in paths { roots += try X509Certificate.certificates(file: path) }
        return roots
    }
}
