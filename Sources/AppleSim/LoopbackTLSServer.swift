import COpenSSL
import Foundation
import Glibc

/// Certificates for https on loopback, made with the system `openssl`: a private CA, a server
/// certificate it signed for `localhost` and 127.0.0.1, and a self-signed "stranger" for
/// `localhost` that nobody trusts. For tests and `bench transport`; removed with `remove()`.
public struct LoopbackTLSCertificates: Sendable {
    public let directory: String
    public var caFile: String { directory + "/ca.pem" }
    public var serverCertificate: String { directory + "/server.pem" }
    public var serverKey: String { directory + "/server.key" }
    public var strangerCertificate: String { directory + "/stranger.pem" }
    public var strangerKey: String { directory + "/stranger.key" }

    public static func make() throws -> LoopbackTLSCertificates {
        let directory = NSTemporaryDirectory() + "receipt-worker-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try openssl(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=receipt-worker test CA"], in: directory)
        try openssl(["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], in: directory)
        try openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
                     "-days", "2", "-extfile", "san.ext"], in: directory)
        try openssl(["req", "-x509"] + ec + ["-keyout", "stranger.key", "-out", "stranger.pem", "-days", "2", "-subj", "/CN=localhost",
                     "-addext", "subjectAltName=DNS:localhost"], in: directory)
        return LoopbackTLSCertificates(directory: directory)
    }

    public func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// Short-lived and never daemonizing, so Foundation's Process is safe here.
    private static func openssl(_ arguments: [String], in directory: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LoopbackTLSError("openssl \(arguments.prefix(2).joined(separator: " ")) failed (status \(process.terminationStatus))")
        }
    }
}

public struct LoopbackTLSError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A blocking HTTPS/1.1 server on 127.0.0.1 for tests and benchmarks (a thread per connection:
/// a load target, not a product server). Keep-alive; every request is answered 200 after
/// `latency` with `respond(body)`; it counts the TLS handshakes it completed.
public final class LoopbackTLSServer: @unchecked Sendable {
    // Safety: `context` and `listenFD` are set once; `handshakes` is guarded by `lock`.
    public let port: Int
    private let context: OpaquePointer
    private let listenFD: Int32
    private let latency: Duration
    private let respond: @Sendable ([UInt8]) -> [UInt8]
    private let lock = NSLock()
    private var handshakes = 0

    public var completedHandshakes: Int { lock.withLock { handshakes } }

    public init(certificate: String, key: String, latency: Duration = .zero,
                respond: @escaping @Sendable ([UInt8]) -> [UInt8] = { Array("echo:".utf8) + $0 }) throws {
        signal(SIGPIPE, SIG_IGN)  // blocking socket BIOs write with write(); a vanished client must not kill us
        guard let context = SSL_CTX_new(TLS_server_method()),
              SSL_CTX_use_certificate_chain_file(context, certificate) == 1,
              SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
            throw LoopbackTLSError("cannot load \(certificate) / \(key)")
        }
        self.context = context
        self.latency = latency
        self.respond = respond
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        listen(fd, 4096)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listenFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    /// Stops accepting; connection threads end when their clients hang up.
    public func stop() {
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let thread = Thread { [self] in serve(fd) }
            thread.stackSize = 256 * 1024
            thread.start()
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
        func readMore() -> Bool {
            let n = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n > 0 { pending += chunk[0..<Int(n)] }
            return n > 0
        }
        while true {
            var headEnd: Int?
            var scanned = 0
            while headEnd == nil {
                if pending.count >= 4 {
                    headEnd = (max(0, scanned - 3)..<(pending.count - 3)).first {
                        pending[$0] == 13 && pending[$0 + 1] == 10 && pending[$0 + 2] == 13 && pending[$0 + 3] == 10
                    }
                    scanned = pending.count
                }
                if headEnd == nil && !readMore() { return }
            }
            let head = String(decoding: pending[0..<headEnd!], as: UTF8.self).lowercased()
            let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            let bodyStart = headEnd! + 4
            while pending.count < bodyStart + length {
                if !readMore() { return }
            }
            let body = respond(Array(pending[bodyStart..<bodyStart + length]))
            pending.removeFirst(bodyStart + length)
            if latency > .zero { Thread.sleep(forTimeInterval: Double(latency.components.seconds) + Double(latency.components.attoseconds) / 1e18) }
            let response = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
            if response.withUnsafeBytes({ SSL_write(ssl, $0.baseAddress, Int32($0.count)) }) <= 0 { return }
        }
    }
}
