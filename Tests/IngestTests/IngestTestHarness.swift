import Foundation
import HTTP
import Ingest
import Observability
import Postgres
import TestSupport
import XCTest

/// A running ingest server on 127.0.0.1:0 over a fresh migrated database, plus a client.
final class IngestHarness: Sendable {
    static let token = "test-token-0123456789abcdef"

    let client: PostgresClient
    let server: IngestServer
    let transport: SocketHTTPTransport
    let metrics: MetricsRegistry
    let logs: CapturingLogSink
    let port: Int

    /// `databaseURL` overrides the fresh database (e.g. an unreachable one).
    init(maxBodyBytes: Int = 4 * 1024 * 1024, databaseURL: String? = nil) async throws {
        let url: String
        if let databaseURL { url = databaseURL } else { url = try await TestDatabase.fresh() }
        client = PostgresClient(conninfo: url, maxConnections: 4)
        metrics = MetricsRegistry()
        logs = CapturingLogSink()
        let configuration = try IngestServer.Configuration(listen: "127.0.0.1:0", token: Self.token, maxBodyBytes: maxBodyBytes)
        server = try IngestServer(configuration: configuration, database: client, metrics: metrics,
                                  logger: Logger(minimumLevel: .debug, sink: logs))
        port = try server.start()
        transport = try SocketHTTPTransport()
    }

    func close() async {
        await transport.shutdown()
        await server.shutdown(grace: .seconds(1))
        await client.close()
    }

    func send(_ method: String, _ path: String, body: String? = nil, token: String? = IngestHarness.token,
              headers: HTTPHeaderFields = []) async throws -> HTTPClientResponse {
        try await send(method, path, bytes: body.map { Array($0.utf8) } ?? [], token: token, headers: headers)
    }

    func send(_ method: String, _ path: String, bytes: [UInt8], token: String? = IngestHarness.token,
              headers: HTTPHeaderFields = []) async throws -> HTTPClientResponse {
        var all = headers
        if let token { all.append(("Authorization", "Bearer \(token)")) }
        if !bytes.isEmpty { all.append(("Content-Type", "application/json")) }
        let url = URL(string: "http://127.0.0.1:\(port)\(path)")!
        return try await transport.send(HTTPClientRequest(method: method, url: url, headers: all, body: bytes),
                                        timeout: .seconds(10))
    }

    /// POSTs a body expected to be accepted and returns its job id.
    func enqueue(_ path: String, _ body: String, token: String? = IngestHarness.token,
                 file: StaticString = #filePath, line: UInt = #line) async throws -> Int64 {
        let response = try await send("POST", path, body: body, token: token)
        XCTAssertEqual(response.status, path == "/v1/notifications" ? 200 : 202, response.text, file: file, line: line)
        return try XCTUnwrap(response.json["job_id"] as? Int64 ?? (response.json["job_id"] as? Int).map(Int64.init),
                             file: file, line: line)
    }

    func count(_ sql: String, _ binds: [any PostgresEncodable] = []) async throws -> Int {
        let rows = try await client.query(sql, binds)
        return try XCTUnwrap(rows.first).decode(Int.self, at: 0)
    }
}

extension HTTPClientResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
    var errorMessage: String? { json["error"] as? String }
}

/// A receipt-like base64 string that differs per `seed`.
func sampleReceipt(_ seed: Int) -> String {
    Data("receipt-\(seed)-\(String(repeating: "x", count: seed % 7))".utf8).base64EncodedString()
}

/// JSON-escaped string literal for building bodies in tests.
func jsonString(_ text: String) -> String {
    let data = try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
    let array = String(decoding: data, as: UTF8.self)
    return String(array.dropFirst().dropLast())
}
