/// Public vocabulary of `receipt-worker ingest --file PATH|-`.

/// Where the NDJSON comes from.
public enum BulkLoadSource: Sendable, Equatable {
    case path(String)
    case standardInput
    /// Borrowed: read to the end, never closed.
    case fileDescriptor(Int32)

    /// The `--file` argument: "-" means standard input.
    public init(argument: String) {
        self = argument == "-" ? .standardInput : .path(argument)
    }
}

public struct BulkLoadOptions: Sendable {
    /// Good lines per COPY + INSERT transaction.
    public var batchSize: Int
    /// Batches loaded at the same time, each on its own connection of the client's pool
    /// (a pool of fewer connections simply serialises them).
    public var parallelBatches: Int
    /// How often `onProgress` is called.
    public var progressInterval: Duration
    /// Longer lines are rejected (and skipped without being held in memory whole).
    public var maxLineBytes: Int

    public init(batchSize: Int = 5_000, parallelBatches: Int = 2, progressInterval: Duration = .milliseconds(500),
                maxLineBytes: Int = 4 * 1024 * 1024) {
        self.batchSize = max(1, batchSize)
        self.parallelBatches = max(1, parallelBatches)
        self.progressInterval = progressInterval
        self.maxLineBytes = max(1, maxLineBytes)
    }
}

/// A line that was not loaded, with the same reason `POST /v1/receipts` would give (never its content).
public struct RejectedLine: Sendable, Equatable, CustomStringConvertible {
    /// 1-based, counting every line of the input (blank ones too).
    public let lineNumber: Int
    public let reason: String

    public init(lineNumber: Int, reason: String) {
        self.lineNumber = lineNumber
        self.reason = reason
    }

    public var description: String { "line \(lineNumber): \(reason)" }
}

/// Counters of a load in progress (the progress callback) or finished (the summary).
public struct BulkLoadStats: Sendable, Equatable {
    /// Every line read so far, blank and rejected ones included.
    public var linesRead = 0
    public var blankLines = 0
    /// Good lines that created a new job.
    public var loaded = 0
    /// Good lines whose job already existed (an earlier run, the HTTP API, or the same line twice).
    public var duplicates = 0
    public var rejected = 0
    public var elapsedSeconds = 0.0

    public init() {}

    public var linesPerSecond: Double { elapsedSeconds > 0 ? Double(linesRead) / elapsedSeconds : 0 }

    /// One human line, e.g. for a progress line updated in place on a terminal.
    public var summaryLine: String {
        "lines=\(linesRead) loaded=\(loaded) duplicates=\(duplicates) rejected=\(rejected) "
            + "rate=\(Int(linesPerSecond.rounded()))/s elapsed=\(Double(Int(elapsedSeconds * 10)) / 10)s"
    }
}

public enum BulkLoadError: Error, Sendable, Equatable, CustomStringConvertible {
    case cannotOpen(path: String, reason: String)
    case readFailed(reason: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open \(path): \(reason)"
        case .readFailed(let reason): "cannot read input: \(reason)"
        }
    }
}
