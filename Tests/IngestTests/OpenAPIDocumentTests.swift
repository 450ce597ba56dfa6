import Foundation
import HTTP
import Ingest
import Observability
import Postgres
import XCTest

/// Keeps `docs/openapi.yaml` true to the ingest server: it is valid OpenAPI (checked by the real
/// `openapi-spec-validator` from PyPI, which `.ci/run` installs), it lists exactly the routes the
/// server's router answers, and each operation's documented answers and security are what the
/// running server gives.
///
/// The YAML is read line by line, no YAML library: under the top-level `paths:`, a path is a key
/// indented 2 spaces (`  /v1/receipts:`), an operation a method key indented 4 (`    post:`), an
/// operation-level `security: []` (6) marks it public, and its answers are the status keys indented
/// 8 under `      responses:` (`        '202':`). Keep the file in that layout.
final class OpenAPIDocumentTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let path = "docs/openapi.yaml"

    func testTheValidatorAcceptsTheDocument() throws {
        let probe = try Self.run(["python3", "-c", "import openapi_spec_validator"])
        guard probe.code == 0 else {
            let why = "openapi-spec-validator is not installed for python3 (pip install openapi-spec-validator; .ci/run installs it): "
                + probe.output
            if ProcessInfo.processInfo.environment["CI"] == "true" { return XCTFail(why) }
            throw XCTSkip(why)
        }
        let result = try Self.run(["python3", "-m", "openapi_spec_validator", Self.path])
        XCTAssertEqual(result.code, 0, "openapi-spec-validator rejects \(Self.path):\n\(result.output)")
    }

    func testEveryRouteOfTheServerIsDocumentedAndNothingElse() throws {
        let client = PostgresClient(conninfo: "host=127.0.0.1 port=1 dbname=unused")  // never connected: the routes are all we read
        let api = IngestAPI(store: JobStore(client: client), authenticator: try BearerTokenAuthenticator(token: "route-list-token"),
                            metrics: IngestMetrics(registry: MetricsRegistry()), logger: Logger(sink: CapturingLogSink()))
        let served = Set(api.router.routeTable.map { "\($0.method) \($0.pattern)" })
        let documented = Set(try OpenAPIOperations.load().map(\.key))
        for route in served.subtracting(documented).sorted() {
            XCTFail("the ingest server answers \(route), but \(Self.path) does not list it")
        }
        for operation in documented.subtracting(served).sorted() {
            XCTFail("\(Self.path) lists \(operation), but the ingest server has no such route")
        }
    }

    /// Each documented operation, called with the token and with a body that is not acceptable,
    /// and again without the token: the server's answers must be among the documented ones, and
    /// a 401 without the token exactly where the operation is not marked public.
    func testTheServerAnswersWhatTheDocumentSays() async throws {
        let operations = try OpenAPIOperations.load()
        XCTAssertFalse(operations.isEmpty)
        let harness = try await IngestHarness()
        for operation in operations {
            let path = operation.path.replacingOccurrences(of: "{id}", with: "987654321")
            let body = operation.method == "POST" ? "{}" : nil
            let withToken = try await harness.send(operation.method, path, body: body)
            XCTAssertTrue(operation.statuses.contains(withToken.status),
                          "\(operation.key) answered \(withToken.status) (\(withToken.text)); \(Self.path) lists \(operation.statuses.sorted())")
            let withoutToken = try await harness.send(operation.method, path, body: body, token: nil)
            XCTAssertTrue(operation.statuses.contains(withoutToken.status),
                          "\(operation.key) without a token answered \(withoutToken.status); \(Self.path) lists \(operation.statuses.sorted())")
            if operation.isPublic {
                XCTAssertNotEqual(withoutToken.status, 401, "\(operation.key) is public in \(Self.path) but asks for the token")
            } else {
                XCTAssertEqual(withoutToken.status, 401, "\(operation.key) needs no token, but \(Self.path) does not mark it `security: []`")
            }
        }
        await harness.close()
    }

    // MARK: -

    static func run(_ arguments: [String]) throws -> (code: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = root
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}

/// The operations of docs/openapi.yaml, read by layout (see `OpenAPIDocumentTests`).
struct OpenAPIOperations {
    struct Operation {
        let method: String
        let path: String
        var statuses: Set<Int> = []
        var isPublic = false
        var key: String { "\(method) \(path)" }
    }

    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    static func load() throws -> [Operation] {
        let url = OpenAPIDocumentTests.root.appendingPathComponent(OpenAPIDocumentTests.path)
        return parse(try String(contentsOf: url, encoding: .utf8))
    }

    static func parse(_ text: String) -> [Operation] {
        var operations: [Operation] = []
        var inPaths = false
        var path: String?
        var inResponses = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let indent = line.prefix { $0 == " " }.count
            let content = line.dropFirst(indent).trimmingCharacters(in: .whitespaces)
            if content.isEmpty || content.hasPrefix("#") { continue }
            if indent == 0 {
                inPaths = content == "paths:"
                continue
            }
            guard inPaths else { continue }
            switch indent {
            case 2 where content.hasPrefix("/") && content.hasSuffix(":"):
                path = String(content.dropLast())
                inResponses = false
            case 4:
                inResponses = false
                let key = content.hasSuffix(":") ? String(content.dropLast()) : ""
                if let path, methods.contains(key) { operations.append(Operation(method: key.uppercased(), path: path)) }
            case 6:
                inResponses = content == "responses:"
                if content == "security: []", !operations.isEmpty { operations[operations.count - 1].isPublic = true }
            case 8 where inResponses:
                let key = content.hasSuffix(":") ? content.dropLast().trimmingCharacters(in: CharacterSet(charactersIn: "'\"")) : ""
                if let status = Int(key), !operations.isEmpty { operations[operations.count - 1].statuses.insert(status) }
            default:
                continue
            }
        }
        return operations
    }
}
