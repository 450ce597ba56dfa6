/// Incremental HTTP/1.x response reader for the client: head (interim 1xx skipped), then a
/// Content-Length, chunked or close-delimited body. Fed whatever bytes arrive.
struct HTTPResponseParser {
    private enum Framing { case none, length(Int), chunked, untilClose }
    private enum ChunkState { case size, data(Int), dataEnd, trailers }

    private let isHeadRequest: Bool
    private let maxBodyBytes: Int
    private var buffer: [UInt8] = []
    private var scanned = 0
    private var framing: Framing?
    private var chunkState = ChunkState.size
    private var status = 0
    private var headers: HTTPHeaderFields = []
    private var body: [UInt8] = []
    private var peerKeepsAlive = false
    private(set) var receivedAnything = false

    init(isHeadRequest: Bool, maxBodyBytes: Int) {
        self.isHeadRequest = isHeadRequest
        self.maxBodyBytes = maxBodyBytes
    }

    /// A complete response and whether the connection may carry another request.
    struct Complete {
        var response: HTTPClientResponse
        var reusable: Bool
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> Complete? {
        receivedAnything = true
        buffer.append(contentsOf: bytes)
        return try advance()
    }

    /// The peer closed: fine for a close-delimited body, a reset for anything unfinished.
    mutating func finishAtEOF() throws(HTTPClientError) -> Complete {
        guard case .untilClose = framing else { throw .connectionReset }
        body.append(contentsOf: buffer)
        buffer = []
        return Complete(response: HTTPClientResponse(status: status, headers: headers, body: body), reusable: false)
    }

    private mutating func advance() throws(HTTPClientError) -> Complete? {
        while framing == nil {
            guard let end = HTTPHead.findEnd(buffer, from: scanned) else {
                scanned = buffer.count
                if buffer.count > 64 * 1024 { throw .invalidResponse("response head too large") }
                return nil
            }
            try parseHead(buffer[0..<end])
            buffer.removeFirst(end)
            scanned = 0
        }
        switch framing! {
        case .none:
            return done()
        case .length(let n):
            guard buffer.count >= n else { return nil }
            body = Array(buffer[0..<n])
            buffer.removeFirst(n)
            return done()
        case .untilClose:
            body.append(contentsOf: buffer)
            buffer = []
            if body.count > maxBodyBytes { throw .invalidResponse("response body too large") }
            return nil
        case .chunked:
            return try advanceChunks()
        }
    }

    private mutating func parseHead(_ head: ArraySlice<UInt8>) throws(HTTPClientError) {
        let line: String
        do {
            (line, headers) = try HTTPHead.parse(head)
        } catch {
            throw .invalidResponse(error.reason)
        }
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0",
              parts[1].count == 3, let code = Int(parts[1]), (100...599).contains(code) else {
            throw .invalidResponse("malformed status line")
        }
        if code < 200 && code != 101 { return }  // interim (100 Continue): the real head follows
        status = code
        peerKeepsAlive = parts[0] == "HTTP/1.1"
            ? !HTTPHead.hasToken(headers, "Connection", "close")
            : HTTPHead.hasToken(headers, "Connection", "keep-alive")
        if isHeadRequest || HTTPStatus.forbidsBody(code) {
            framing = Framing.none
        } else if let te = headers.firstValue("Transfer-Encoding") {
            framing = te.lowercased().hasSuffix("chunked") ? .chunked : .untilClose
        } else {
            let length: Int?
            do { length = try HTTPHead.contentLength(headers) } catch { throw .invalidResponse("invalid Content-Length") }
            if let length {
                guard length <= maxBodyBytes else { throw .invalidResponse("response body too large") }
                framing = .length(length)
            } else {
                framing = .untilClose
            }
        }
    }

    private mutating func advanceChunks() throws(HTTPClientError) -> Complete? {
        var pos = 0
        defer { buffer.removeFirst(pos) }
        while true {
            switch chunkState {
            case .size, .trailers:
                guard let lineEnd = crlf(from: pos) else {
                    if buffer.count - pos > 8 * 1024 { throw .invalidResponse("chunk line too long") }
                    return nil
                }
                let line = buffer[pos..<lineEnd]
                pos = lineEnd + 2
                if case .trailers = chunkState {
                    if line.isEmpty {
                        buffer.removeFirst(pos)
                        pos = 0
                        return done()
                    }
                    continue
                }
                let sizeText = String(decoding: line.prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self).trimmingWhitespace
                guard !sizeText.isEmpty, sizeText.count <= 15, let size = Int(sizeText, radix: 16), size >= 0 else {
                    throw .invalidResponse("malformed chunk size")
                }
                guard body.count + size <= maxBodyBytes else { throw .invalidResponse("response body too large") }
                chunkState = size == 0 ? .trailers : .data(size)
            case .data(let remaining):
                let take = min(remaining, buffer.count - pos)
                body.append(contentsOf: buffer[pos..<pos + take])
                pos += take
                guard take == remaining else {
                    chunkState = .data(remaining - take)
                    return nil
                }
                chunkState = .dataEnd
            case .dataEnd:
                guard buffer.count - pos >= 2 else { return nil }
                guard buffer[pos] == 13, buffer[pos + 1] == 10 else { throw .invalidResponse("missing CRLF after chunk") }
                pos += 2
                chunkState = .size
            }
        }
    }

    private func crlf(from start: Int) -> Int? {
        var i = start
        while i + 1 < buffer.count {
            if buffer[i] == 13 && buffer[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    /// Reusable only if the peer agreed and sent nothing beyond this response.
    private func done() -> Complete {
        Complete(response: HTTPClientResponse(status: status, headers: headers, body: body),
                 reusable: peerKeepsAlive && buffer.isEmpty)
    }
}
