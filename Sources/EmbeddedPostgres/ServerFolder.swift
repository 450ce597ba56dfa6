import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A fresh temp folder for a private server's data, owned by the user the server runs as:
/// as root that is the `postgres` system user (PostgreSQL refuses to run as root), and
/// `runAs` is the prefix that runs a server program as that user.
struct ServerFolder {
    let path: String
    let runAs: [String]

    init(prefix: String) throws {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CommandError(description: "cannot create a temp folder in /tmp") }
        path = String(cString: made)
        guard getuid() == 0 else {
            runAs = []
            return
        }
        guard let user = getpwnam("postgres") else {
            rmdir(path)
            throw CommandError(description: "running as root needs a 'postgres' system user to run the server (install the postgresql package)")
        }
        chown(path, user.pointee.pw_uid, user.pointee.pw_gid)
        runAs = ["/usr/sbin/runuser", "-u", "postgres", "--"]
    }
}
