import Foundation
import Glibc
import XCTest
@testable import HTTP

/// Runs blocking socket code on its own thread, never on the cooperative pool the server's
/// handlers need.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

struct RawSocketError: Error, CustomStringConvertible {
    let description: String
}

/// A blocking TCP socket with a receive timeout, for speaking raw (often broken) HTTP.
final class RawSocket: @unchecked Sendable {
    let fd: Int32

    init(fd: Int32, receiveTimeout: Double = 5) {
        self.fd = fd
        var tv = timeval(tv_sec: Int(receiveTimeout), tv_usec: Int((receiveTimeout - Double(Int(receiveTimeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    static func connect(port: Int, receiveTimeout: Double = 5) throws -> RawSocket {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let address = SocketAddress(numericHost: "127.0.0.1", port: port)!
        guard address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else {
            close(fd)
            throw RawSocketError(description: "connect: \(errnoDescription())")
        }
        return RawSocket(fd: fd, receiveTimeout: receiveTimeout)
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawSocketError(description: "send: \(errnoDescription())") }
            offset += n
        }
    }

    /// Reads once; nil on EOF, throws on timeout or error.
    func readSome() throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { return nil }
        if n < 0 {
            if errno == ECONNRESET { return nil }
            throw RawSocketError(description: errno == EAGAIN ? "read timed out" : "recv: \(errnoDescription())")
        }
        return Array(buffer[0..<n])
    }

    /// Everything until the peer closes.
    func readToEOF() throws -> [UInt8] {
        var all: [UInt8] = []
        while let chunk = try readSome() { all += chunk }
        return all
    }

    /// One complete response, parsed by the module's own client parser.
    func readResponse(isHead: Bool = false) throws -> HTTPClientResponse {
        var parser = HTTPResponseParser(isHeadRequest: isHead, maxBodyBytes: 1 << 24)
        while true {
            guard let chunk = try readSome() else {
                return try parser.finishAtEOF().response
            }
            if let done = try chunk.withUnsafeBytes({ try parser.feed($0) }) { return done.response }
        }
    }

    /// `count` pipelined responses, which may share a read: fed byte-wise so each parser stops at its end.
    func readResponses(_ count: Int) throws -> [HTTPClientResponse] {
        var responses: [HTTPClientResponse] = []
        var parser = HTTPResponseParser(isHeadRequest: false, maxBodyBytes: 1 << 20)
        while responses.count < count {
            guard let chunk = try readSome() else { break }
            for byte in chunk {
                if let done = try [byte].withUnsafeBytes({ try parser.feed($0) }) {
                    responses.append(done.response)
                    parser = HTTPResponseParser(isHeadRequest: false, maxBodyBytes: 1 << 20)
                }
            }
        }
        return responses
    }

    /// One request head (and Content-Length body) as a raw test server sees it.
    func readRequest() throws -> (head: String, body: [UInt8])? {
        var buffer: [UInt8] = []
        while HTTPHead.findEnd(buffer) == nil {
            guard let chunk = try readSome() else { return nil }
            buffer += chunk
        }
        let end = HTTPHead.findEnd(buffer)!
        let (_, headers) = try HTTPHead.parse(buffer[0..<end])
        let length = try HTTPHead.contentLength(headers) ?? 0
        var body = Array(buffer[end...])
        while body.count < length {
            guard let chunk = try readSome() else { return nil }
            body += chunk
        }
        return (String(decoding: buffer[0..<end], as: UTF8.self), body)
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Closes with RST instead of FIN.
    func reset() {
        var lingerOption = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lingerOption, socklen_t(MemoryLayout<linger>.size))
        shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// A listening socket on 127.0.0.1 and a port the kernel chose.
func listenOnLoopback(backlog: Int32) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    let address = SocketAddress(numericHost: "127.0.0.1", port: 0)!
    guard address.withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, backlog) == 0 else {
        close(fd)
        throw RawSocketError(description: "bind: \(errnoDescription())")
    }
    return (fd, SocketAddress.localPort(of: fd))
}

/// A scripted single-thread TCP server for client tests: each accepted connection is handed to
/// `script` in turn (on one background thread).
final class RawServer: @unchecked Sendable {
    let port: Int
    private let listenFD: Int32

    init(script: @escaping @Sendable (RawSocket) throws -> Void, connections: Int = 1) throws {
        (listenFD, port) = try listenOnLoopback(backlog: 16)
        let fd = listenFD
        Thread {
            for _ in 0..<connections {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                try? script(RawSocket(fd: client))
            }
        }.start()
    }

    deinit {
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }
}

/// A keep-alive HTTP server that answers requests in waves: none of a wave of `wave` requests is
/// answered before all of them have arrived, so a client must hold `wave` connections at once.
/// Counts the connections it accepted (a thread each).
final class WaveServer: @unchecked Sendable {
    let port: Int
    let accepted = Counter()
    private let listenFD: Int32
    private let condition = NSCondition()
    private var arrived = 0

    init(wave: Int) throws {
        (listenFD, port) = try listenOnLoopback(backlog: 64)
        let fd = listenFD
        Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                accepted.increment()
                Thread { [self] in serve(RawSocket(fd: client), wave: wave) }.start()
            }
        }.start()
    }

    private func serve(_ socket: RawSocket, wave: Int) {
        while (try? socket.readRequest()) != nil {
            condition.lock()
            arrived += 1
            let waveEnds = (arrived + wave - 1) / wave * wave
            condition.broadcast()
            while arrived < waveEnds { condition.wait() }
            condition.unlock()
            guard (try? socket.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) != nil else { return }
        }
    }

    deinit {
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }
}

/// A thread-safe counter/flag for observing handlers from tests.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

extension HTTPClientResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
}

func url(_ port: Int, _ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }
