import COpenSSL
import Foundation
import Glibc
import XCTest

/// Certificates made with the system `openssl` for one test run: a private CA, a server
/// certificate it signed for `localhost`/127.0.0.1, and a self-signed one nobody trusts.
struct TLSTestCertificates {
    let directory: URL
    var caFile: String { directory.appendingPathComponent("ca.pem").path }
    var serverCertificate: String { directory.appendingPathComponent("server.pem").path }
    var serverKey: String { directory.appendingPathComponent("server.key").path }
    var strangerCertificate: String { directory.appendingPathComponent("stranger.pem").path }
    var strangerKey: String { directory.appendingPathComponent("stranger.key").path }

    static func make() throws -> TLSTestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rw-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificates = TLSTestCertificates(directory: directory)
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(to: directory.appendingPathComponent("san.ext"), atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try run(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=receipt-worker test CA"], in: directory)
        try run(["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], in: directory)
        try run(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
                 "-days", "2", "-extfile", "san.ext"], in: directory)
        try run(["req", "-x509"] + ec + ["-keyout", "stranger.key", "-out", "stranger.pem", "-days", "2", "-subj", "/CN=localhost",
                 "-addext", "subjectAltName=DNS:localhost"], in: directory)
        return certificates
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    private static func run(_ arguments: [String], in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NSError(domain: "openssl", code: Int(process.terminationStatus), userInfo: [NSLocalizedDescriptionKey: arguments.joined(separator: " ")])
        }
    }
}

/// A blocking HTTPS/1.1 server for tests: one thread per connection, keep-alive, answers every
/// request with 200 and `echo:` + its body, and counts the TLS handshakes it completed.
final class TLSTestServer: @unchecked Sendable {
    private let context: OpaquePointer
    private let listenFD: Int32
    let port: Int
    private let lock = NSLock()
    private var handshakes = 0
    private var stopped = false

    var completedHandshakes: Int { lock.withLock { handshakes } }

    init(certificate: String, key: String) throws {
        signal(SIGPIPE, SIG_IGN)  // the blocking socket BIO writes with write()
        guard let context = SSL_CTX_new(TLS_server_method()),
              SSL_CTX_use_certificate_chain_file(context, certificate) == 1,
              SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
            throw NSError(domain: "tls-test-server", code: 1)
        }
        self.context = context
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        listen(fd, 128)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listenFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    func stop() {
        lock.withLock { stopped = true }
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { return }
            Thread { [self] in serve(fd) }.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        guard let ssl = SSL_new(context) else { return }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, fd)
        guard SSL_accept(ssl) == 1 else { return }
        lock.withLock { handshakes += 1 }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            // One request: head up to CRLFCRLF, then Content-Length bytes of body.
            var headEnd: Int?
            while headEnd == nil {
                headEnd = pending.indices.dropLast(3).first { pending[$0] == 13 && pending[$0 + 1] == 10 && pending[$0 + 2] == 13 && pending[$0 + 3] == 10 }
                if headEnd != nil { break }
                let n = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if n <= 0 { return }
                pending += chunk[0..<Int(n)]
            }
            let head = String(decoding: pending[0..<headEnd!], as: UTF8.self)
            let length = head.split(separator: "\r\n").compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
            let bodyStart = headEnd! + 4
            while pending.count < bodyStart + length {
                let n = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if n <= 0 { return }
                pending += chunk[0..<Int(n)]
            }
            let body = Array("echo:".utf8) + pending[bodyStart..<bodyStart + length]
            pending.removeFirst(bodyStart + length)
            let response = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nContent-Type: text/plain\r\n\r\n".utf8) + body
            let written = response.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
            if written <= 0 { return }
        }
    }
}
