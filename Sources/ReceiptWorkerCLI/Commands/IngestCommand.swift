import Foundation
import HTTP
import Ingest
import Observability
import Postgres

/// `receipt-worker ingest`: the ingest HTTP API (docs/reference.md) until SIGTERM/SIGINT, or with `--file PATH|-`
/// a one-shot bulk load of NDJSON receipts.
enum IngestCommand {
    static let spec = CommandSpec(
        name: "ingest",
        summary: "The ingest process: the HTTP API (POST /v1/receipts, ...) on --listen until SIGTERM; or --file PATH|- to bulk-load NDJSON receipts with COPY.",
        usage: "ingest [--listen HOST:PORT] [--ingest-token-file PATH] ... | ingest --file PATH|-",
        settings: Settings.database + [Settings.ingestListen, Settings.ingestToken, Settings.ingestTokenFile, Settings.maxBody,
                                       Settings.shutdownGrace] + Settings.logging,
        flags: [
            CommandFlag(name: "file", takesValue: true,
                        help: "load NDJSON lines shaped like POST /v1/receipts bodies ('-' for stdin), then exit: 0 all loaded, 1 some rejected"),
        ])

    static func run(_ runtime: Runtime) async throws -> Int32 {
        if let file = runtime.options.flag("file") {
            return try await IngestFileLoad.run(runtime, source: BulkLoadSource(argument: file))
        }
        return try await serve(runtime)
    }

    private static func serve(_ runtime: Runtime) async throws -> Int32 {
        let options = runtime.options
        guard let token = try options.secret(Settings.ingestToken, file: Settings.ingestTokenFile) else {
            throw UsageError("INGEST_TOKEN is not set (or pass --ingest-token, or set INGEST_TOKEN_FILE): the HTTP API needs it")
        }
        let logger = runtime.logger
        let listen = try options.require(Settings.ingestListen)
        let configuration: IngestServer.Configuration
        do {
            configuration = try IngestServer.Configuration(listen: listen, token: token, maxBodyBytes: options.int(Settings.maxBody))
        } catch {
            throw UsageError("invalid INGEST_LISTEN (--listen) '\(listen)': must be a numeric HOST:PORT, e.g. 127.0.0.1:8080")
        }
        let registry = MetricsRegistry()
        let client = try await runtime.connectDatabase(applicationName: "receipt-worker-ingest", observer: DatabaseMetrics(registry: registry))
        DatabaseMetrics.watch(client, registry: registry)
        do {
            try await requireSchema(client)
            let server = try IngestServer(configuration: configuration, database: client, metrics: registry, logger: logger)
            let signals = SignalWatcher()  // before the start line: whoever reads it may signal at once
            do {
                try server.start()  // logs ingest_started with the bound port
            } catch {
                throw listenFailure("INGEST_LISTEN (--listen)", listen, error)
            }
            let number = await signals.firstSignal(logger: logger)
            logger.notice("shutdown_requested", ["signal": .int(Int(number))])
            await server.shutdown(grace: options.duration(Settings.shutdownGrace))
        } catch {
            await client.close()
            throw error
        }
        await client.close()
        return 0
    }

    /// Both modes write iap.jobs through the migrated schema: without it, say so up front
    /// instead of answering 503 to every request.
    static func requireSchema(_ client: PostgresClient) async throws {
        let migrated = try await client.query("SELECT to_regprocedure('iap.job_dedup_key(text,text,text,text)') IS NOT NULL")[0]
            .decode(Bool.self, at: 0)
        guard migrated else { throw UsageError("DATABASE_URL: the iap schema is missing; run receipt-worker migrate first") }
    }

    /// A failed bind (port taken, address not local) as a one-line configuration error.
    static func listenFailure(_ setting: String, _ address: String, _ error: any Error) -> UsageError {
        let why = switch error {
        case HTTPServerError.bindFailed(let why), HTTPServerError.systemCallFailed(let why): why
        default: "\(error)"
        }
        return UsageError("\(setting): cannot listen on \(address): \(why)")
    }
}

/// `ingest --file PATH|-`: every good line loaded, each bad one reported on stderr as
/// `line N: reason`, a summary on stdout. Exit 0 when nothing was rejected, else 1.
enum IngestFileLoad {
    static func run(_ runtime: Runtime, source: BulkLoadSource) async throws -> Int32 {
        _ = try runtime.databaseURL()
        if case .path(let path) = source { try checkReadable(path) }
        let loader = BulkLoadOptions()
        let client = try await runtime.connectDatabase(maxConnections: loader.parallelBatches,
                                                       applicationName: "receipt-worker-ingest-file")
        let stats: BulkLoadStats
        do {
            try await IngestCommand.requireSchema(client)
            stats = try await BulkLoader(client: client, options: loader).load(source, onRejected: { rejected in
                Console.progress("")  // clears a progress line on a terminal, so the two never share a line
                FileHandle.standardError.write(Data("\(rejected)\n".utf8))
            }, onProgress: { Console.progress("ingest: " + $0.summaryLine) })
        } catch {
            await client.close()
            Console.endProgress()
            throw translate(error)
        }
        await client.close()
        Console.endProgress()
        Console.print(stats.summaryLine)
        return stats.rejected > 0 ? 1 : 0
    }

    /// Unreadable input is a usage error (exit 2), found before the database is touched.
    private static func checkReadable(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UsageError("--file: cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw UsageError("--file: cannot read \(path): it is a folder")
        }
    }

    /// Server messages can quote row values, and rows hold receipts: report only the kind and
    /// SQLSTATE. Committed batches stay, and re-running the file is safe (duplicates are skipped).
    private static func translate(_ error: any Error) -> any Error {
        switch error {
        case let error as BulkLoadError:
            if case .cannotOpen = error { return UsageError("--file: \(error)") }
            return error
        case let error as PostgresError:
            return IngestFileLoadFailure(description: "database failure during the load (\(error.kind), SQLSTATE \(error.sqlState ?? "-")); "
                                         + "batches committed so far stay, re-running the file skips them")
        default:
            return error
        }
    }
}

/// A run-time failure of a bulk load (exit 1), worded without row content.
struct IngestFileLoadFailure: Error, CustomStringConvertible {
    let description: String
}

extension SignalWatcher {
    /// Suspends until the first SIGINT/SIGTERM and returns its number. A second signal while the
    /// process is shutting down exits at once (the operator means it).
    func firstSignal(logger: Logger) async -> Int32 {
        let signals = self.signals
        return await withCheckedContinuation { continuation in
            Task.detached {
                var waiting = true
                for await number in signals {
                    if waiting {
                        waiting = false
                        continuation.resume(returning: number)
                    } else {
                        logger.warning("shutdown_forced", ["signal": .int(Int(number))])
                        exit(1)
                    }
                }
            }
        }
    }
}
