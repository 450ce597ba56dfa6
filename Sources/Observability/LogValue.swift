/// A typed field value. Typed (not just `String`) so JSON lines keep numbers and booleans as such.
public enum LogValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    /// Any describable value as a string field, e.g. `.describing(uuid)` or `.describing(error)`.
    public static func describing(_ value: some CustomStringConvertible) -> LogValue {
        .string(value.description)
    }

    /// An error as a string field. Registered secrets inside the message are still redacted by the logger.
    public static func error(_ error: any Error) -> LogValue {
        .string(String(describing: error))
    }
}

extension LogValue: ExpressibleByStringInterpolation {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension LogValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .int(value) }
}

extension LogValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension LogValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension LogValue: CustomStringConvertible {
    /// The plain (unquoted) text of the value, as it appears in logfmt before quoting.
    public var description: String {
        switch self {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): formatNumber(d)
        case .bool(let b): b ? "true" : "false"
        }
    }
}
