/// One parameterised statement, its parameters already in wire form: what `pipeline` sends.
public struct PostgresStatement: Sendable {
    public let sql: String
    let parameters: [PostgresBind]

    public init(_ sql: String, _ binds: [any PostgresEncodable] = []) {
        self.sql = sql
        self.parameters = binds.map(\.postgresBind)
    }

    /// libpq reads text parameters up to the first NUL: refuse rather than store a truncated value.
    func checkParameters() throws {
        if let index = parameters.firstIndex(where: { $0.format == .text && $0.bytes?.contains(0) == true }) {
            throw PostgresError(kind: .client, sqlState: "22021",
                                message: "parameter $\(index + 1) contains a NUL character, which text cannot hold")
        }
    }
}
