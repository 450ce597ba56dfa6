@testable import Queue
import XCTest

/// A `job_finished` line's `announcement_key` is made of Apple's transaction ids where the job
/// has them, so the same finish made again on another primary (under another job id) keeps it.
final class FinishAnnouncementKeyTests: XCTestCase {
    private func row(_ id: Int, _ transactionIDs: [String]) -> CompletionRow {
        CompletionRow(id: id, state: "done", outcome: "credited", delaySeconds: nil, appleStatus: 0, error: nil, transactionIDs: transactionIDs)
    }

    func testTheKeyNamesTheTransactionsNotTheJob() {
        XCTAssertEqual(BatchCompleter.announcementKey("credited", row(41, ["2000000007"])), "credited:2000000007")
        XCTAssertEqual(BatchCompleter.announcementKey("credited", row(42, ["2000000007"])), "credited:2000000007")
        XCTAssertEqual(BatchCompleter.announcementKey("credited", row(43, ["2000000009", "2000000008"])), "credited:2000000008,2000000009")
        XCTAssertEqual(BatchCompleter.announcementKey("invalid_receipt", row(44, [])), "invalid_receipt:job:44")
    }
}
