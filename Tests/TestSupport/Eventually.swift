import Foundation

/// Polls `condition` until it holds or `seconds` pass; tests wait on outcomes, never on clocks.
public func eventually(_ seconds: Double = 30, every interval: Duration = .milliseconds(50),
                       _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return false
}
