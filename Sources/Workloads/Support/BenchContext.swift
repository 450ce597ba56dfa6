import EmbeddedPostgres
import Foundation
import Observability
import Postgres

/// What a benchmark gets from the command line: its database (a private cluster or
/// DATABASE_URL), the migrations, the numbers it was given, and the binary to spawn.
public struct BenchContext: Sendable {
    public let databaseURL: String
    /// nil when DATABASE_URL was given.
    public let cluster: PrivateCluster?
    public let migrator: Migrator?
    /// Flags already checked to be positive whole numbers, by name (`jobs`, `concurrency`, ...).
    public let numbers: [String: Int]
    /// Decimal flags already checked to be positive (`pace`), by name; a switch given (`durable`) is 1.
    public let decimals: [String: Double]
    /// Text flags already checked (`apple-url`), by name.
    public let texts: [String: String]
    public let logger: Logger
    /// `DATABASE_POOL_SIZE` of the processes measured.
    public let databasePoolSize: Int
    /// The `receipt-worker` executable, for benchmarks that run real worker processes.
    public let binaryPath: String

    public init(databaseURL: String, cluster: PrivateCluster?, migrator: Migrator?, numbers: [String: Int],
                decimals: [String: Double] = [:], texts: [String: String] = [:], logger: Logger, databasePoolSize: Int = 4,
                binaryPath: String = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path) {
        self.databaseURL = databaseURL
        self.cluster = cluster
        self.migrator = migrator
        self.numbers = numbers
        self.decimals = decimals
        self.texts = texts
        self.logger = logger
        self.databasePoolSize = databasePoolSize
        self.binaryPath = binaryPath
    }

    public func number(_ flag: String, default value: Int) -> Int { numbers[flag] ?? value }

    /// The database as the benchmarks' closures want it.
    func withDatabase<T: Sendable>(_ body: (String, PrivateCluster?) async throws -> T) async throws -> T {
        try await body(databaseURL, cluster)
    }

    /// Applies the migrations (every benchmark that uses the database starts with this).
    func migrate(_ client: PostgresClient) async throws {
        guard let migrator else { throw WorkloadError("no migrations were given") }
        try await client.withConnection { _ = try await migrator.migrate($0) }
    }
}
