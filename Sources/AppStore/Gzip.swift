import CZlib

/// gzip through zlib: App Store Connect sends sales reports gzip'd, and apple-sim must send them the same way.
public enum Gzip {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { "gzip: \(reason)" }
    }

    /// windowBits 15 + 16: zlib reads and writes the gzip wrapper, not the zlib one.
    private static let gzipWindowBits: Int32 = 15 + 16
    private static let chunk = 64 * 1024

    /// Inflates one gzip member; refuses trailing garbage, a truncated stream and output past `limit` bytes.
    public static func decompress(_ input: [UInt8], limit: Int = 1 << 30) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, gzipWindowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Failure(reason: "inflateInit failed")
        }
        defer { inflateEnd(&stream) }
        let (output, status) = pump(&stream, input, step: { inflate(&$0, Z_NO_FLUSH) }) { status, stream, produced in
            status == Z_OK && produced <= limit && (stream.avail_in > 0 || stream.avail_out == 0)
        }
        guard output.count <= limit else { throw Failure(reason: "inflated past \(limit) bytes") }
        guard status == Z_STREAM_END else { throw Failure(reason: status == Z_OK || status == Z_BUF_ERROR ? "truncated stream" : "corrupt stream (\(status))") }
        guard stream.avail_in == 0 else { throw Failure(reason: "bytes after the end of the gzip stream") }
        return output
    }

    public static func compress(_ input: [UInt8]) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        guard deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, gzipWindowBits, 8, Z_DEFAULT_STRATEGY,
                            zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Failure(reason: "deflateInit failed")
        }
        defer { deflateEnd(&stream) }
        let (output, status) = pump(&stream, input, step: { deflate(&$0, Z_FINISH) }) { status, _, _ in
            status == Z_OK || status == Z_BUF_ERROR
        }
        guard status == Z_STREAM_END else { throw Failure(reason: "deflate failed (\(status))") }
        return output
    }

    /// Feeds `input` to `stream` and collects what `step` (inflate or deflate) writes, a chunk at a
    /// time, while `more(status, stream, bytes so far)` says so.
    private static func pump(_ stream: inout z_stream, _ input: [UInt8], step: (inout z_stream) -> Int32,
                             more: (Int32, z_stream, Int) -> Bool) -> (output: [UInt8], status: Int32) {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        var status: Int32 = Z_OK
        var input = input
        let inputCount = input.count
        input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = UInt32(inputCount)
            repeat {
                let produced: Int = buffer.withUnsafeMutableBufferPointer { target in
                    stream.next_out = target.baseAddress
                    stream.avail_out = UInt32(target.count)
                    status = step(&stream)
                    return target.count - Int(stream.avail_out)
                }
                output.append(contentsOf: buffer[0..<produced])
            } while more(status, stream, output.count)
        }
        return (output, status)
    }
}
