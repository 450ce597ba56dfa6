import Foundation
import UTCTime

/// Command output for people (tables, summaries), written at once so it interleaves
/// correctly with log lines, which go straight to the file descriptor too.
public enum Console {
    public static func print(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// A progress line that rewrites itself on a terminal; nothing when piped.
    public static func progress(_ text: String) {
        guard isatty(STDERR_FILENO) == 1 else { return }
        FileHandle.standardError.write(Data(("\r\u{1B}[2K" + text).utf8))
    }

    public static func endProgress() {
        guard isatty(STDERR_FILENO) == 1 else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }

    /// Timestamps in tables and JSON for people: ISO 8601, UTC.
    public static func timestamp(_ date: Date) -> String { UTCDateTime(date).text() }
}
