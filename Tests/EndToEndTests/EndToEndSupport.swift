import Foundation
import HTTP
import TestSupport

// Shared by the end-to-end tests of long-running commands (ingest, apple-sim, work).

extension ChildProcess {
    /// The `port=` of the process's first `event=<event>` log line, waiting for it to appear.
    func loggedPort(_ event: String, timeout: Double = 60) async throws -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let line = stdout.split(separator: "\n").first { $0.contains("event=\(event) ") }
            if let port = line?.split(separator: " ").first(where: { $0.hasPrefix("port=") }).flatMap({ Int($0.dropFirst(5)) }) {
                return port
            }
            guard isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw LoggedPortMissing(event: event, stdout: stdout, stderr: stderr)
    }
}

struct LoggedPortMissing: Error { let event: String, stdout: String, stderr: String }

/// Requests to 127.0.0.1 over the project's own socket client (no URLSession), JSON answers decoded.
struct LoopbackClient {
    private let transport: SocketHTTPTransport

    init() throws { transport = try SocketHTTPTransport() }

    func send(_ method: String, port: Int, path: String, body: String = "",
              headers: HTTPHeaderFields = []) async throws -> (status: Int, json: [String: Any]) {
        let request = HTTPClientRequest(method: method, url: URL(string: "http://127.0.0.1:\(port)\(path)")!,
                                        headers: headers + [("Content-Type", "application/json")], body: Array(body.utf8))
        let response = try await transport.send(request, timeout: .seconds(30))
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        return (response.status, json ?? [:])
    }

    func shutdown() async { await transport.shutdown() }
}
