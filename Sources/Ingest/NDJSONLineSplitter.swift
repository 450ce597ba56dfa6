#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Splits what a file descriptor yields into lines, streaming: one 1 MiB read buffer, plus a carry
/// buffer only for a line that straddles two reads. Uses blocking read(2), so it must run on a
/// dedicated thread, never on the Swift cooperative pool.
struct NDJSONLineSplitter {
    let fileDescriptor: Int32
    let maxLineBytes: Int
    var chunkSize = 1 << 20

    /// Calls `body` with each line's number (from 1) and bytes, without "\n"; nil bytes mean the line
    /// was longer than `maxLineBytes` (it was skipped, not buffered). `body` returns false to stop.
    func forEachLine(_ body: (_ number: Int, _ line: UnsafeBufferPointer<UInt8>?) -> Bool) throws {
        let chunk = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: chunkSize)
        defer { chunk.deallocate() }
        let base = chunk.baseAddress!
        var carry: [UInt8] = []
        var overlong = false
        var number = 0

        func emit(_ line: UnsafeBufferPointer<UInt8>?) -> Bool {
            number += 1
            return body(number, line)
        }

        while true {
            let count = read(fileDescriptor, base, chunkSize)
            if count < 0 {
                if errno == EINTR { continue }
                throw BulkLoadError.readFailed(reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            var start = 0
            while start < count {
                guard let hit = memchr(base + start, 0x0A, count - start) else {
                    let tail = count - start
                    if !overlong {
                        if carry.count + tail > maxLineBytes {
                            overlong = true
                            carry.removeAll()
                        } else {
                            carry.append(contentsOf: UnsafeBufferPointer(start: base + start, count: tail))
                        }
                    }
                    break
                }
                let end = hit.assumingMemoryBound(to: UInt8.self) - base
                let piece = UnsafeBufferPointer(start: base + start, count: end - start)
                let keepGoing: Bool
                if overlong || carry.count + piece.count > maxLineBytes {
                    overlong = false
                    carry.removeAll()
                    keepGoing = emit(nil)
                } else if carry.isEmpty {
                    keepGoing = emit(piece)  // the common case: no copy at all
                } else {
                    carry.append(contentsOf: piece)
                    keepGoing = carry.withUnsafeBufferPointer { emit($0) }
                    carry.removeAll(keepingCapacity: true)
                }
                if !keepGoing { return }
                start = end + 1
            }
        }
        // A last line without a trailing newline still counts.
        if overlong {
            _ = emit(nil)
        } else if !carry.isEmpty {
            _ = carry.withUnsafeBufferPointer { emit($0) }
        }
    }
}
