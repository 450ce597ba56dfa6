/// Why a sales report was refused. Reconciling against a report misread is worse than not reconciling,
/// so anything unexpected is refused, with its line.
public struct SalesReportParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var reason: String

    public init(line: Int, _ reason: String) {
        self.line = line
        self.reason = reason
    }

    public var description: String { "sales report line \(line): \(reason)" }
}
