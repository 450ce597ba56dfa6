import Dispatch
import Foundation
import Postgres
import Synchronization

/// One batch of good lines, already in COPY text format (encoded on the reader thread so the
/// database side only ships bytes).
struct ReceiptBatch: Sendable {
    var copyData: [UInt8] = []
    var rows = 0
}

/// Counters shared by the reader thread, the database loop and the progress ticker.
final class BulkLoadCounters: Sendable {
    private let counts = Mutex(BulkLoadStats())
    private let stopFlag = Atomic<Bool>(false)

    func update(_ change: (inout BulkLoadStats) -> Void) { counts.withLock { change(&$0) } }
    func snapshot(elapsed: Duration) -> BulkLoadStats {
        var stats = counts.withLock { $0 }
        let (seconds, attoseconds) = elapsed.components
        stats.elapsedSeconds = Double(seconds) + Double(attoseconds) / 1e18
        return stats
    }

    var isStopped: Bool { stopFlag.load(ordering: .acquiring) }
    func stop() { stopFlag.store(true, ordering: .releasing) }
}

/// Calls the caller's callbacks one at a time, so a CLI can interleave rejected lines and an
/// in-place progress line without them tearing.
final class BulkLoadReporter: Sendable {
    private let lock = Mutex(())
    private let onRejected: @Sendable (RejectedLine) -> Void
    private let onProgress: @Sendable (BulkLoadStats) -> Void

    init(onRejected: @escaping @Sendable (RejectedLine) -> Void, onProgress: @escaping @Sendable (BulkLoadStats) -> Void) {
        self.onRejected = onRejected
        self.onProgress = onProgress
    }

    func rejected(_ line: RejectedLine) { lock.withLock { _ in onRejected(line) } }
    func progress(_ stats: BulkLoadStats) { lock.withLock { _ in onProgress(stats) } }
}

/// The producer half of a bulk load, on its own thread: read, validate, batch. It takes one of
/// `slots` per batch (given back when the batch is committed), so memory stays bounded whatever the
/// file size while the next batch is parsed during the current COPY.
struct BulkLoadReader: Sendable {
    let source: BulkLoadSource
    let options: BulkLoadOptions
    let counters: BulkLoadCounters
    let reporter: BulkLoadReporter
    let slots: DispatchSemaphore

    /// Starts the thread; batches arrive on the returned stream, which ends after the last line.
    func start() -> AsyncThrowingStream<ReceiptBatch, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ReceiptBatch.self)
        let counters = self.counters, slots = self.slots
        continuation.onTermination = { _ in
            counters.stop()
            slots.signal()  // wake a reader waiting for a slot, so it sees the stop
        }
        let reader = self
        let thread = Thread {
            do {
                try reader.run(continuation)
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.name = "ingest-file-reader"
        thread.start()
        return stream
    }

    private func run(_ continuation: AsyncThrowingStream<ReceiptBatch, any Error>.Continuation) throws {
        let (fd, owned) = try open()
        defer { if owned { close(fd) } }
        var batch = ReceiptBatch()
        var pending = BulkLoadStats()  // published in bulk: one lock per thousand lines, not per line

        func publish() {
            let delta = pending
            counters.update {
                $0.linesRead += delta.linesRead
                $0.blankLines += delta.blankLines
                $0.rejected += delta.rejected
            }
            pending = BulkLoadStats()
        }
        func ship() -> Bool {
            publish()
            slots.wait()
            if counters.isStopped { return false }
            continuation.yield(batch)
            batch = ReceiptBatch()
            return true
        }

        try NDJSONLineSplitter(fileDescriptor: fd, maxLineBytes: options.maxLineBytes).forEachLine { number, line in
            pending.linesRead += 1
            if let line {
                switch Self.parse(line, isFirst: number == 1) {
                case .blank:
                    pending.blankLines += 1
                case .good(let receipt):
                    CopyTextEncoder.append([receipt.userID, receipt.orderID, receipt.productID, receipt.receiptData],
                                           to: &batch.copyData)
                    batch.rows += 1
                case .bad(let reason):
                    pending.rejected += 1
                    reporter.rejected(RejectedLine(lineNumber: number, reason: reason))
                }
            } else {
                pending.rejected += 1
                reporter.rejected(RejectedLine(lineNumber: number, reason: "line longer than \(options.maxLineBytes) bytes"))
            }
            if batch.rows >= options.batchSize { return ship() }
            if pending.linesRead >= 1_024 { publish() }
            return !counters.isStopped
        }
        if batch.rows > 0 { _ = ship() } else { publish() }
    }

    private enum Parsed {
        case blank
        case good(ReceiptSubmission)
        case bad(String)
    }

    private static func parse(_ line: UnsafeBufferPointer<UInt8>, isFirst: Bool) -> Parsed {
        var start = 0, end = line.count
        // A UTF-8 byte order mark some editors put at the start of a file.
        if isFirst, end >= 3, line[0] == 0xEF, line[1] == 0xBB, line[2] == 0xBF { start = 3 }
        if end > start, line[end - 1] == 0x0D { end -= 1 }  // CRLF files
        let body = UnsafeBufferPointer(rebasing: line[start..<end])
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return .blank }
        do {
            return .good(try ReceiptSubmission(json: body))
        } catch let error as IngestValidationError {
            return .bad(error.message)
        } catch {
            return .bad("invalid line")
        }
    }

    private func open() throws -> (Int32, owned: Bool) {
        switch source {
        case .standardInput: return (STDIN_FILENO, false)
        case .fileDescriptor(let fd): return (fd, false)
        case .path(let path):
            let fd = Foundation.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw BulkLoadError.cannotOpen(path: path, reason: String(cString: strerror(errno))) }
            return (fd, true)
        }
    }
}
