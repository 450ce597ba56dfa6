import Foundation

/// Where the system's initdb / pg_ctl live: PATH first, then Debian's versioned folders.
struct PostgresBinaries {
    let initdb: String
    let pgCtl: String

    static func locate() throws -> PostgresBinaries {
        var folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let versioned = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let newestFirst = versioned.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
        folders += newestFirst
        for folder in folders {
            let initdb = folder + "/initdb", pgCtl = folder + "/pg_ctl"
            if FileManager.default.isExecutableFile(atPath: initdb), FileManager.default.isExecutableFile(atPath: pgCtl) {
                return PostgresBinaries(initdb: initdb, pgCtl: pgCtl)
            }
        }
        throw CommandError(description: "PostgreSQL server programs (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin; install the postgresql package")
    }
}
