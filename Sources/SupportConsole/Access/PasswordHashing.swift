import Foundation

/// Runs scrypt on a few dedicated threads. A hash takes a good fraction of a second of CPU and
/// tens of MiB: on Swift's cooperative pool, a burst of sign-ins would hold every thread that
/// serves pages. Here a burst queues for its turn; past `maxWaiting` it is turned away.
public final class PasswordHashing: Sendable {
    private let queue: OperationQueue
    private let maxWaiting: Int

    public init(threads: Int = 2, maxWaiting: Int = 64) {
        let queue = OperationQueue()
        queue.name = "console-password-hashing"
        queue.maxConcurrentOperationCount = threads
        queue.qualityOfService = .userInitiated
        self.queue = queue
        self.maxWaiting = maxWaiting
    }

    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        guard queue.operationCount < maxWaiting else { throw PasswordHashingBusy() }
        return await withCheckedContinuation { continuation in
            queue.addOperation { continuation.resume(returning: work()) }
        }
    }
}

/// Too many sign-ins waiting for the hashing threads: answered 503, try again shortly.
public struct PasswordHashingBusy: Error, CustomStringConvertible {
    public var description: String { "too many sign-ins at once; try again in a moment" }
}
