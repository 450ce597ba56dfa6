#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Where finished log lines go. `line` has no trailing newline; the sink adds it.
public protocol LogSink: Sendable {
    func write(_ line: String)
    /// Several lines at once, in order (`Logger.batch`); by default one `write` each.
    func write(lines: [String])
}

extension LogSink {
    public func write(lines: [String]) {
        for line in lines { write(line) }
    }
}

/// Writes lines to a file descriptor, each line with one `write(2)` under a lock, so lines from
/// concurrent tasks never interleave even when longer than `PIPE_BUF`.
public final class FileDescriptorSink: LogSink {
    private let fileDescriptor: Int32
    private let lock = Mutex(())

    /// The descriptor is borrowed, never closed by the sink.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    // One shared sink per standard stream, so every logger in the process shares its lock.
    static let standardOutput = FileDescriptorSink(fileDescriptor: 1)
    static let standardError = FileDescriptorSink(fileDescriptor: 2)

    public func write(_ line: String) {
        var text = line
        text.append("\n")
        text.withUTF8 { writeWhole($0) }
    }

    /// The lines in one `write(2)`: a batch of a thousand finished jobs is one system call.
    public func write(lines: [String]) {
        guard lines.count > 1 else { return lines.forEach { write($0) } }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(lines.reduce(lines.count) { $0 + $1.utf8.count })
        for line in lines {
            bytes.append(contentsOf: line.utf8)
            bytes.append(UInt8(ascii: "\n"))
        }
        bytes.withUnsafeBufferPointer { writeWhole($0) }
    }

    private func writeWhole(_ bytes: UnsafeBufferPointer<UInt8>) {
        lock.withLock { _ in
            var offset = 0
            // Loops only on a partial write or EINTR; normally this is exactly one write(2).
            while offset < bytes.count {
                let written = systemWrite(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return  // a closed or broken log stream must not take the worker down
                }
            }
        }
    }
}

// At file scope `write` is the C function, not `FileDescriptorSink.write`.
private func systemWrite(_ fd: Int32, _ buffer: UnsafePointer<UInt8>, _ count: Int) -> Int {
    write(fd, buffer, count)
}

/// The default sink: standard output.
public struct StandardOutputSink: LogSink {
    public init() {}
    public func write(_ line: String) { FileDescriptorSink.standardOutput.write(line) }
    public func write(lines: [String]) { FileDescriptorSink.standardOutput.write(lines: lines) }
}

/// Standard error, for tools whose stdout carries data.
public struct StandardErrorSink: LogSink {
    public init() {}
    public func write(_ line: String) { FileDescriptorSink.standardError.write(line) }
    public func write(lines: [String]) { FileDescriptorSink.standardError.write(lines: lines) }
}

/// Keeps lines in memory: for tests, and for the lines of a `Logger.batch` until it ends.
public final class CapturingLogSink: LogSink {
    private let storage = Mutex<[String]>([])

    public init() {}

    public func write(_ line: String) {
        storage.withLock { $0.append(line) }
    }

    public func write(lines: [String]) {
        storage.withLock { $0.append(contentsOf: lines) }
    }

    public var lines: [String] {
        storage.withLock { $0 }
    }

    public func removeAll() {
        storage.withLock { $0.removeAll() }
    }
}
