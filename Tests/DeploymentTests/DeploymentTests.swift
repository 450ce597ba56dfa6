import Foundation
import TestSupport
import XCTest

/// The three ways receipt-worker is deployed, exercised with the real tools, through the same
/// scripts a user runs (docs/operations.md shows them):
///
/// - `scripts/container-stack.sh`: the release binary (`--static-swift-stdlib`), the image of
///   `docker/Dockerfile` (its runtime stage, from the host's binary, on a Debian base made locally
///   when no registry answers), and the stack of `docker/compose.yaml` under podman-compose, end to
///   end: receipts posted to ingest are credited exactly once while a worker container is killed,
///   a worker's `/metrics`, Prometheus with the alert rules, a sign-in to the console, a clean down;
/// - `scripts/check-manifests.sh`: `deploy/kubernetes` against the Kubernetes schemas and
///   `deploy/systemd` with `systemd-analyze verify`.
///
/// `.ci/run` installs the tools and sets `RECEIPT_WORKER_REQUIRE_DEPLOY_TESTS=1`: then a missing
/// tool, or a machine where containers cannot run, fails with one line. Without it (a developer's
/// machine without podman) these tests are skipped with that line.
final class DeploymentTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let required = ProcessInfo.processInfo.environment["RECEIPT_WORKER_REQUIRE_DEPLOY_TESTS"] == "1"

    func testKubernetesManifestsAndSystemdUnitsAreValid() async throws {
        let result = try await Self.script("check-manifests.sh", timeout: 300)
        try Self.unlessUnavailable(result)
        XCTAssertEqual(result.code, 0, "scripts/check-manifests.sh failed:\n\(result.stdout)\(result.stderr)")
        XCTAssertTrue(result.stdout.contains("check-manifests: all held"), result.stdout)
    }

    func testTheImageAndTheComposeStackRunEndToEnd() async throws {
        for tool in ["podman", "buildah", "podman-compose", "runc"] where !Self.isInstalled(tool) {
            try Self.unavailable("\(tool) is not installed (apt-get install podman buildah runc debootstrap podman-compose)")
        }
        // The release build, the base image and the stack: about 5 minutes on 2 cores, more
        // when the release binary or the base image is not there yet.
        let result = try await Self.script("container-stack.sh", timeout: 2400)
        try Self.unlessUnavailable(result)
        XCTAssertEqual(result.code, 0, "scripts/container-stack.sh failed:\n\(result.stdout)\(result.stderr)")
        for line in ["receipts credited once each", "killed", "/metrics: iap_credits_total", "alert rules loaded",
                     "console: signed in", "step all held"] {
            XCTAssertTrue(result.stdout.contains(line), "no line with \"\(line)\" in:\n\(result.stdout)")
        }
    }

    /// Runs a script of `scripts/` from the repository root; its output is printed (CI's log shows
    /// what each step took).
    static func script(_ name: String, timeout: Double) async throws -> (code: Int32, stdout: String, stderr: String) {
        let path = root.appendingPathComponent("scripts").appendingPathComponent(name).path
        let result = try await ChildProcess.run(["/bin/bash", path], timeout: timeout)
        print(result.stdout, terminator: "")
        if result.code != 0 { print(result.stderr, terminator: "") }
        return result
    }

    /// Exit code 3: the script could not run here (a tool or a privilege is missing; one line says which).
    static func unlessUnavailable(_ result: (code: Int32, stdout: String, stderr: String)) throws {
        guard result.code == 3 else { return }
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let line = lines.first { $0.contains("cannot run containers here") || $0.contains("missing tool") } ?? lines.last ?? "exit code 3"
        try unavailable(line)
    }

    static func unavailable(_ why: String) throws {
        if required { throw Unavailable(description: "deployment tests cannot run on this machine: \(why)") }
        throw XCTSkip("\(why) (set RECEIPT_WORKER_REQUIRE_DEPLOY_TESTS=1 to make this a failure)")
    }

    static func isInstalled(_ tool: String) -> Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }
    }
}

/// RECEIPT_WORKER_REQUIRE_DEPLOY_TESTS=1 and the tools cannot run: the test fails with this line.
struct Unavailable: Error, CustomStringConvertible {
    let description: String
}
