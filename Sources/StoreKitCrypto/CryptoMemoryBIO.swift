import CCryptoShim
import COpenSSL

/// Scoped memory BIOs: every BIO is freed before these return.
enum CryptoMemoryBIO {
    /// Runs `body` with a read-only BIO over `bytes`.
    static func reading<T>(_ bytes: [UInt8], _ body: (OpaquePointer) throws(CryptoError) -> T) throws(CryptoError) -> T {
        let result: Result<T, CryptoError> = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                return .failure(.openSSL("BIO_new_mem_buf"))
            }
            defer { BIO_free(bio) }
            do throws(CryptoError) { return .success(try body(bio)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Runs `write` against an empty BIO and returns what it wrote.
    static func writing(_ operation: String, _ write: (OpaquePointer) -> Int32) throws(CryptoError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .openSSL("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) > 0 else { throw .openSSL(operation) }
        var data: UnsafePointer<CChar>?
        let length = ccryptoshim_bio_mem_contents(bio, &data)
        guard let data, length > 0 else { throw CryptoError(operation, reason: "empty output") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }
}
