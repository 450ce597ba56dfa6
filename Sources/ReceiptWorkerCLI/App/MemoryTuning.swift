import CLinuxShim

/// glibc gives each thread that meets contention its own malloc arena (up to 8 per core), and
/// memory freed in an arena stays in the process, so a worker with thousands of Apple requests
/// in flight holds more than it needs. Two arenas serve the cooperative pool's threads and the few
/// connection threads. `MALLOC_ARENA_MAX` in the environment, read by glibc itself, wins.
enum MemoryTuning {
    static func apply(environment: [String: String]) {
        #if os(Linux)
        guard environment["MALLOC_ARENA_MAX"] == nil else { return }
        _ = clinux_limit_malloc_arenas(2)
        #endif
    }
}
