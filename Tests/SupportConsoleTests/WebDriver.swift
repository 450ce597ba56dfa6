import EmbeddedPostgres
import Foundation
import HTTP
import TestSupport
import XCTest

/// A headless Chromium driven through chromedriver's W3C WebDriver HTTP API, with the project's
/// own HTTP client (no third-party packages).
final class WebDriver: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    let driver: ChildProcess
    let transport: SocketHTTPTransport
    let base: String
    private(set) var session = ""

    /// Starts chromedriver on a free loopback port and opens a headless Chromium session.
    static func start() async throws -> WebDriver {
        let port = try PrivateCluster.freePort()
        let driver = try ChildProcess(["/usr/bin/chromedriver", "--port=\(port)", "--allowed-ips=127.0.0.1"])
        let webDriver = WebDriver(driver: driver, transport: try SocketHTTPTransport(), base: "http://127.0.0.1:\(port)")
        let ready = try await eventually(30) {
            ((try? await webDriver.call("GET", "/status"))?["value"] as? [String: Any])?["ready"] as? Bool == true
        }
        guard ready else { throw Failure(description: "chromedriver did not become ready: \(driver.stderr)") }
        let capabilities: [String: Any] = ["capabilities": ["alwaysMatch": [
            "browserName": "chrome",
            "goog:chromeOptions": ["binary": "/usr/bin/chromium",
                                   "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                            "--hide-scrollbars", "--window-size=1280,800"]],
        ]]]
        let created = try await webDriver.call("POST", "/session", capabilities)
        guard let id = (created["value"] as? [String: Any])?["sessionId"] as? String else { throw Failure(description: "no session: \(created)") }
        webDriver.session = id
        return webDriver
    }

    static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver") && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
    }

    private init(driver: ChildProcess, transport: SocketHTTPTransport, base: String) {
        self.driver = driver
        self.transport = transport
        self.base = base
    }

    func quit() async {
        _ = try? await call("DELETE", "/session/\(session)")
        _ = try? await raw("GET", "/shutdown", nil)   // chromedriver's own way out
        await transport.shutdown()
        if (try? await driver.wait(timeout: 5)) == nil { driver.signal(SIGKILL) }
    }

    // MARK: commands

    func open(_ url: String) async throws { _ = try await command("POST", "url", ["url": url]) }
    func currentURL() async throws -> String { try await command("GET", "url") as? String ?? "" }
    func source() async throws -> String { try await command("GET", "source") as? String ?? "" }
    func title() async throws -> String { try await command("GET", "title") as? String ?? "" }

    func find(_ css: String) async throws -> String {
        let value = try await command("POST", "element", ["using": "css selector", "value": css])
        guard let element = (value as? [String: Any])?[Self.elementKey] as? String else { throw Failure(description: "no element \(css)") }
        return element
    }

    func count(_ css: String) async throws -> Int {
        (try await command("POST", "elements", ["using": "css selector", "value": css]) as? [Any])?.count ?? 0
    }

    func type(_ css: String, _ text: String) async throws {
        let element = try await find(css)
        _ = try await command("POST", "element/\(element)/clear", [:])
        _ = try await command("POST", "element/\(element)/value", ["text": text])
    }

    func click(_ css: String) async throws {
        _ = try await command("POST", "element/\(try await find(css))/click", [:])
    }

    @discardableResult
    func execute(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command("POST", "execute/sync", ["script": script, "args": arguments])
    }

    /// The text of an open JavaScript dialog, or nil when none is open.
    func openDialogText() async throws -> String? {
        let response = try await raw("GET", "/session/\(session)/alert/text", nil)
        guard response.status == 200 else { return nil }
        return (try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])?["value"] as? String
    }

    static let tab = "\u{E004}", enter = "\u{E007}"

    /// Keys pressed on whatever has the focus, as a person at the keyboard would (`tab`, `enter`, or text).
    func press(_ keys: String) async throws {
        let strokes = keys.map { key -> [[String: Any]] in
            [["type": "keyDown", "value": String(key)], ["type": "keyUp", "value": String(key)]]
        }.flatMap { $0 }
        _ = try await command("POST", "actions", ["actions": [["type": "key", "id": "keyboard", "actions": strokes]]])
    }

    func setWindow(width: Int, height: Int) async throws {
        _ = try await command("POST", "window/rect", ["width": width, "height": height])
    }

    func screenshot(to path: String) async throws {
        guard let base64 = try await command("GET", "screenshot") as? String, let png = Data(base64Encoded: base64) else {
            throw Failure(description: "no screenshot")
        }
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try png.write(to: URL(fileURLWithPath: path))
    }

    // MARK: wire

    private func command(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        try await call(method, "/session/\(session)/\(path)", body)["value"] ?? nil
    }

    private func call(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> [String: Any] {
        let response = try await raw(method, path, body)
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
        guard response.status == 200 else { throw Failure(description: "\(method) \(path): \(response.status) \(object)") }
        return object
    }

    private func raw(_ method: String, _ path: String, _ body: [String: Any]?) async throws -> HTTPClientResponse {
        let bytes = try body.map { [UInt8](try JSONSerialization.data(withJSONObject: $0)) } ?? []
        return try await transport.send(HTTPClientRequest(method: method, url: URL(string: base + path)!,
                                                          headers: [("Content-Type", "application/json; charset=utf-8")], body: bytes),
                                        timeout: .seconds(60))
    }
}
