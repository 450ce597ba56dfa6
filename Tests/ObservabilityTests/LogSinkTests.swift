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
