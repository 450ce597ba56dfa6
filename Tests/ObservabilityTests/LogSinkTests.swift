import Foundation
import XCTest
@testable import Observability

final class LogSinkTests: XCTestCase {
    /// Lines far longer than PIPE_BUF from 50 tasks must still come out whole, one per line.
    func testConcurrentLoggingToFileDescriptorNeverInterleaves() async throws {
        let path = NSTemporaryDirectory() + "obs-sink-\(UUID().uuidString).log"
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { unlink(path) }
        let logger = Logger(sink: FileDescriptorSink(fileDescriptor: fd))
        let tasks = 50, linesPerTask = 10
        let payloadLength = 6_000
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    let payload = String(repeating: Character(Unicode.Scalar(UInt8(65 + task % 26))), count: payloadLength)
                    for index in 0..<linesPerTask {
                        logger.info("chunk", ["task": .int(task), "i": .int(index), "payload": .string(payload), "end": "eol"])
                    }
                }
            }
        }
        close(fd)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.hasSuffix("\n"))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        XCTAssertEqual(lines.count, tasks * linesPerTask)
        var seen = Set<String>()
        for line in lines {
            let fields = line.split(separator: " ")
            XCTAssertEqual(fields.count, 7, String(line.prefix(120)))
            guard fields.count == 7, let task = Int(fields[3].dropFirst(5)) else { continue }
            let letter = Character(Unicode.Scalar(UInt8(65 + task % 26)))
            XCTAssertEqual(fields[5], "payload=" + String(repeating: letter, count: payloadLength))
            XCTAssertEqual(fields[6], "end=eol")
            seen.insert("\(fields[3]) \(fields[4])")
        }
        XCTAssertEqual(seen.count, tasks * linesPerTask)
    }

    /// A batch's lines reach the sink when the batch ends, in order, filtered by level, with the
    /// logger's fixed fields; written to a descriptor together, beside single lines of other
    /// tasks, each still comes out whole.
    func testABatchWritesItsLinesTogetherWhenItEnds() async throws {
        let capture = CapturingLogSink()
        let logger = Logger(minimumLevel: .info, sink: capture).with(["worker": "w1"])
        let returned = logger.batch { batch -> Int in
            batch.info("job_finished", ["job_id": 1])
            batch.debug("dropped", [:])
            batch.warning("lease_lost", ["job_id": 2])
            XCTAssertTrue(capture.lines.isEmpty, "nothing before the batch ends")
            return 7
        }
        XCTAssertEqual(returned, 7)
        XCTAssertEqual(capture.lines.count, 2)
        XCTAssertTrue(capture.lines[0].contains("level=info event=job_finished worker=w1 job_id=1"), capture.lines[0])
        XCTAssertTrue(capture.lines[1].contains("level=warning event=lease_lost worker=w1 job_id=2"), capture.lines[1])
        logger.batch { _ in }
        XCTAssertEqual(capture.lines.count, 2, "an empty batch writes nothing")

        let path = NSTemporaryDirectory() + "obs-batch-\(UUID().uuidString).log"
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { unlink(path) }
        let file = Logger(sink: FileDescriptorSink(fileDescriptor: fd))
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<20 {
                group.addTask {
                    if task % 2 == 0 {
                        file.batch { batch in for i in 0..<100 { batch.info("batched", ["task": .int(task), "i": .int(i)]) } }
                    } else {
                        for i in 0..<100 { file.info("single", ["task": .int(task), "i": .int(i)]) }
                    }
                }
            }
        }
        close(fd)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 2_000)
        for task in stride(from: 0, to: 20, by: 2) {
            let own = lines.filter { $0.contains("event=batched task=\(task) ") }
            XCTAssertEqual(own.map { $0.split(separator: " ").last.map(String.init) }, (0..<100).map { "i=\($0)" }, "task \(task): whole, in order")
            let first = lines.firstIndex { $0.contains("event=batched task=\(task) i=0") }!
            XCTAssertTrue(lines[first..<first + 100].allSatisfy { $0.contains("event=batched task=\(task) ") }, "task \(task): together")
        }
    }

    func testCapturingSinkFromManyTasks() async {
        let sink = CapturingLogSink()
        let logger = Logger(format: .json, sink: sink)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<50 {
                group.addTask { for i in 0..<100 { logger.info("e", ["t": .int(task), "i": .int(i)]) } }
            }
        }
        XCTAssertEqual(sink.lines.count, 5_000)
        XCTAssertTrue(sink.lines.allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") })
        sink.removeAll()
        XCTAssertTrue(sink.lines.isEmpty)
    }
}
