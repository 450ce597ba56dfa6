import COpenSSL
import EmbeddedPostgres
import Foundation
import Glibc

/// The https side of `bench transport`: apple-sim speaks plain http, so this stands in for
/// Apple's TLS front — a private CA and a `localhost` certificate made with the system
/// `openssl`, and a blocking server (a thread per connection, as a load target only) that
/// answers every request after `latency` with a verifyReceipt-shaped body.
final class BenchTLSServer: @unchecked Sendable {
    let port: Int
    let caFile: String
    private let directory: String
    private let context: OpaquePointer
    private let listenFD: Int32
    private let latency: UInt32

    init(latencyMilliseconds: Int) throws {
        directory = NSTemporaryDirectory() + "receipt-worker-bench-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        caFile = directory + "/ca.pem"
        try Self.makeCertificates(in: directory)
        signal(SIGPIPE, SIG_IGN)  // blocking socket BIOs write with write(); a vanished client must not kill the bench
        guard let context = SSL_CTX_new(TLS_server_method()),
              SSL_CTX_use_certificate_chain_file(context, directory + "/server.pem") == 1,
              SSL_CTX_use_PrivateKey_file(context, directory + "/server.key", SSL_FILETYPE_PEM) == 1 else {
            throw CommandError(description: "cannot load the bench TLS certificate")
        }
        self.context = context
        latency = UInt32(latencyMilliseconds * 1000)
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
        let acceptor = Thread { [self] in acceptLoop() }
        acceptor.start()
    }

    /// Stops accepting; connection threads end when their clients hang up.
    func stop() {
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func makeCertificates(in directory: String) throws {
        let openssl = "/usr/bin/openssl"
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try "subjectAltName=DNS:localhost\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        try CommandRunner.run([openssl, "req", "-x509"] + ec + ["-keyout", directory + "/ca.key", "-out", directory + "/ca.pem",
                              "-days", "1", "-subj", "/CN=receipt-worker bench CA"])
        try CommandRunner.run([openssl, "req"] + ec + ["-keyout", directory + "/server.key", "-out", directory + "/server.csr",
                              "-subj", "/CN=localhost"])
        try CommandRunner.run([openssl, "x509", "-req", "-in", directory + "/server.csr", "-CA", directory + "/ca.pem",
                               "-CAkey", directory + "/ca.key", "-CAcreateserial", "-out", directory + "/server.pem",
                               "-days", "1", "-extfile", directory + "/san.ext"])
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

    private static let answer = Array(#"{"status":0,"environment":"Production","receipt":{"bundle_id":"com.example.bench","in_app":[]}}"#.utf8)

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        guard let ssl = SSL_new(context) else { return }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, fd)
        guard SSL_accept(ssl) == 1 else { return }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            guard let (headEnd, length) = readHead(ssl, &pending, &chunk) else { return }
            while pending.count < headEnd + 4 + length {
                let n = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if n <= 0 { return }
                pending += chunk[0..<Int(n)]
            }
            pending.removeFirst(headEnd + 4 + length)
            usleep(latency)
            let response = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(Self.answer.count)\r\n\r\n".utf8) + Self.answer
            if response.withUnsafeBytes({ SSL_write(ssl, $0.baseAddress, Int32($0.count)) }) <= 0 { return }
        }
    }

    /// Reads until a whole request head is buffered: its end offset and Content-Length.
    private func readHead(_ ssl: OpaquePointer, _ pending: inout [UInt8], _ chunk: inout [UInt8]) -> (Int, Int)? {
        var scanned = 0
        while true {
            if pending.count >= 4 {
                for index in max(0, scanned - 3)..<(pending.count - 3)
                where pending[index] == 13 && pending[index + 1] == 10 && pending[index + 2] == 13 && pending[index + 3] == 10 {
                    let head = String(decoding: pending[0..<index], as: UTF8.self).lowercased()
                    let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                    return (index, length)
                }
                scanned = pending.count
            }
            let n = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { return nil }
            pending += chunk[0..<Int(n)]
        }
    }
}
