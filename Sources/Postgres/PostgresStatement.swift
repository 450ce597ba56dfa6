/// One parameterised statement, its parameters already in wire form: what `pipeline` sends.
public struct PostgresStatement: Sendable {
    public private(set) var sql: String
    let parameters: [PostgresBind]

    public init(_ sql: String, _ binds: [any PostgresEncodable] = []) {
        self.sql = sql
        self.parameters = binds.map(\.postgresBind)
    }

    /// The same statement under `EXPLAIN` (with `options`, e.g. `ANALYZE`), its parameters kept:
    /// plan tests read what the server does with exactly what we send.
    public func explained(_ options: String = "") -> PostgresStatement {
        var statement = self
        statement.sql = "EXPLAIN " + (options.isEmpty ? "" : "(\(options)) ") + sql
        return statement
    }

    /// libpq reads text parameters up to the first NUL: refuse rather than store a truncated value.
    func checkParameters() throws {
        if let index = parameters.firstIndex(where: { $0.format == .text && $0.bytes?.contains(0) == true }) {
            throw PostgresError(kind: .client, sqlState: "22021",
                                message: "parameter $\(index + 1) contains a NUL character, which text cannot hold")
        }
    }
}
