/// A structured logger: one line per event, `event` plus ordered key/value fields.
///
/// Cheap to copy and pass around; `with(_:)` derives a logger carrying fixed fields such as `worker_id`.
/// Call-site fields are an autoclosure, so a call below the minimum level builds nothing.
public struct Logger: Sendable {
    public let minimumLevel: LogLevel
    public let format: LogFormat
    public let sink: any LogSink
    public let redactor: Redactor
    // Already redacted when attached, so they are not re-scanned on every line.
    private let fixedFields: [(key: String, value: LogValue)]

    public init(
        minimumLevel: LogLevel = .info,
        format: LogFormat = .logfmt,
        sink: any LogSink = StandardOutputSink(),
        redactor: Redactor = Redactor()
    ) {
        self.init(minimumLevel: minimumLevel, format: format, sink: sink, redactor: redactor, fixedFields: [])
    }

    private init(
        minimumLevel: LogLevel, format: LogFormat, sink: any LogSink, redactor: Redactor,
        fixedFields: [(key: String, value: LogValue)]
    ) {
        self.minimumLevel = minimumLevel
        self.format = format
        self.sink = sink
        self.redactor = redactor
        self.fixedFields = fixedFields
    }

    /// Lets callers skip expensive preparation for a level that would be dropped anyway.
    public func isEnabled(_ level: LogLevel) -> Bool { level >= minimumLevel }

    /// A logger that appends `fields` (after any earlier fixed fields) to every line.
    public func with(_ fields: KeyValuePairs<String, LogValue>) -> Logger {
        let added = fields.map { (key: $0.key, value: redactor.redact(key: $0.key, value: $0.value)) }
        return Logger(minimumLevel: minimumLevel, format: format, sink: sink, redactor: redactor,
                      fixedFields: fixedFields + added)
    }

    /// The same logger with another minimum level (e.g. a chatty component turned down).
    public func withMinimumLevel(_ level: LogLevel) -> Logger {
        Logger(minimumLevel: level, format: format, sink: sink, redactor: redactor, fixedFields: fixedFields)
    }

    public func log(_ level: LogLevel, _ event: String, _ fields: @autoclosure () -> KeyValuePairs<String, LogValue> = [:]) {
        guard isEnabled(level) else { return }
        emit(level, event, fields())
    }

    /// For fields assembled at run time; check `isEnabled` first if building them is costly.
    public func log(_ level: LogLevel, _ event: String, fields: [(key: String, value: LogValue)]) {
        guard isEnabled(level) else { return }
        emit(level, event, fields)
    }

    public func debug(_ event: String, _ fields: @autoclosure () -> KeyValuePairs<String, LogValue> = [:]) {
        guard isEnabled(.debug) else { return }
        emit(.debug, event, fields())
    }

    public func info(_ event: String, _ fields: @autoclosure () -> KeyValuePairs<String, LogValue> = [:]) {
        guard isEnabled(.info) else { return }
        emit(.info, event, fields())
    }

    public func notice(_ event: String, _ fields: @autoclosure () -> KeyValuePairs<String, LogValue> = [:]) {
        guard isEnabled(.notice) else { return }
        emit(.notice, event, fields())
    }

    public func warning(_ event: String, _ fields: @autoclosure () -> KeyValuePairs<String, LogValue> = [:]) {
        guard isEnabled(.warning) else { return }
        emit(.warning, event, fields())
    }

    public func error(_ event: String, _ fields: @autoclosure () -> KeyValuePairs<String, LogValue> = [:]) {
        guard isEnabled(.error) else { return }
        emit(.error, event, fields())
    }

    /// Runs `body` with a logger whose lines go to this logger's sink together when `body`
    /// returns (`LogSink.write(lines:)`: one system call for standard output), for the many lines
    /// of one event such as a completed batch. Lines are kept in memory until then.
    public func batch<T>(_ body: (Logger) throws -> T) rethrows -> T {
        let collector = CapturingLogSink()
        let batched = Logger(minimumLevel: minimumLevel, format: format, sink: collector, redactor: redactor, fixedFields: fixedFields)
        defer { sink.write(lines: collector.lines) }
        return try body(batched)
    }

    private func emit(_ level: LogLevel, _ event: String, _ fields: some Sequence<(key: String, value: LogValue)>) {
        var line = LogLineBuilder(format: format, timestamp: currentUTCTimestamp(), level: level, event: event)
        for field in fixedFields {
            line.append(key: field.key, value: field.value)
        }
        for field in fields {
            line.append(key: field.key, value: redactor.redact(key: field.key, value: field.value))
        }
        sink.write(line.finish())
    }
}
