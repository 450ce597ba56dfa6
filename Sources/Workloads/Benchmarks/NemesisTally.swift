/// Counts the announcements of each stream by their stable key against what the database says
/// was done: each expected key announced exactly once (re-emissions, `repeat=true`, are not
/// counted), nothing announced that was not done. Two excuses, each counted on its own line:
/// a worker SIGKILLed between a commit and its announcement (nothing re-announces a job's line;
/// an alert is owed by the re-emitter), and an asynchronous failover that lost commits (what
/// was announced on the lost timeline is re-made and announced again with the same key).
struct NemesisTally: Sendable {
    typealias Stream = NemesisAnnouncement.Stream

    /// When the excuses apply.
    struct Windows: Sendable {
        /// SIGKILLs of workers: the worker slot and when (seconds since 1970).
        var kills: [(worker: Int, at: Double)] = []
        /// How long before a kill a commit of the killed worker may have started (the call deadline).
        var killWindow = 0.0
        /// How long after its alert line a killed worker's webhook delivery may still have been queued.
        var deliveryWindow = 20.0
        /// Asynchronous failovers that lost commits.
        var lostTimelines: [LostTimeline] = []

        func killedAround(commitAt time: Double) -> Bool {
            kills.contains { (($0.at - killWindow)...($0.at + 1)).contains(time) }
        }

        func killed(_ worker: Int, within range: ClosedRange<Double>) -> Bool {
            kills.contains { $0.worker == worker && range.contains($0.at) }
        }

        func onLostTimeline(_ time: Double) -> LostTimeline? {
            lostTimelines.first { $0.announced.contains(time) }
        }
    }

    /// What an asynchronous failover lost: commits made from when the standby stopped being
    /// waited for until the old primary crashed, announced by then (and up to a second after,
    /// for a line written just after its reply arrived); whatever is made again is written
    /// on the new primary, after the crash.
    struct LostTimeline: Sendable, Equatable {
        let announced: ClosedRange<Double>
        let remadeAfter: Double

        init(from start: Double, crashedAt: Double) {
            announced = start...(crashedAt + 1)
            remadeAfter = crashedAt
        }
    }

    /// A test's way to show the checker can fail: one announcement counted twice, or not at all.
    enum Tampering: Sendable, Equatable {
        case none
        case double(NemesisAnnouncement.Stream)
        case drop(NemesisAnnouncement.Stream)
    }

    struct Count: Sendable {
        var expected = 0
        var once = 0
        var missing = 0
        var missingOwedByKilledWorkers = 0
        var doubled = 0
        var remadeAfterLostCommits = 0
        var phantom = 0
        var lostWithTimeline = 0
        /// Lines or calls that should carry `announcement_key` and do not.
        var unkeyed = 0
        var repeats = 0
        /// The first few keys missing, doubled or phantom (where to start reading the logs).
        var examples: [String] = []

        var passed: Bool { missing == 0 && doubled == 0 && phantom == 0 && unkeyed == 0 }

        mutating func note(_ problem: String, _ key: String) {
            if examples.count < 5 { examples.append("\(problem):\(key)") }
        }
    }

    let expectation: NemesisExpectation
    let windows: Windows

    /// Every stream's count, after `tampering`; also the key tampered with, if any.
    func count(_ observed: [NemesisAnnouncement], tampering: Tampering = .none) -> (counts: [Stream: Count], tampered: String?) {
        var observed = observed
        let tampered = tamper(&observed, tampering)
        var counts: [Stream: Count] = [:]
        let alertLines = observed.filter { $0.stream == .alertLine && !$0.repeated }
        for stream in Stream.allCases {
            counts[stream] = count(stream, observed.filter { $0.stream == stream }, alertLines: alertLines)
        }
        return (counts, tampered)
    }

    private func count(_ stream: Stream, _ announcements: [NemesisAnnouncement], alertLines: [NemesisAnnouncement]) -> Count {
        var count = Count()
        let rows = Dictionary(grouping: expectation.rows[stream] ?? [], by: \.key)
        var seen: [String: [NemesisAnnouncement]] = [:]
        for announcement in announcements {
            guard let key = announcement.key else {
                count.unkeyed += 1
                continue
            }
            if announcement.repeated {
                count.repeats += 1
                // A re-emission of something never raised is as wrong as a first announcement of it.
                if rows[key] == nil, windows.onLostTimeline(announcement.at) == nil {
                    count.phantom += 1
                    count.note("phantom_repeat", key)
                }
                continue
            }
            seen[key, default: []].append(announcement)
        }
        for (key, expected) in rows.sorted(by: { $0.key < $1.key }) {
            let made = seen[key] ?? []
            count.expected += expected.count
            count.once += min(made.count, expected.count)
            if made.count < expected.count {
                let owed = expected.filter { excusedMissing(stream, key: key, row: $0, alertLines: alertLines) }.count
                let missing = expected.count - made.count
                count.missingOwedByKilledWorkers += min(owed, missing)
                if missing > owed {
                    count.missing += missing - owed
                    count.note("missing", key)
                }
            } else if made.count > expected.count {
                // Announced on a timeline a failover then lost, while every row of the key was
                // written after that failover: re-made, with the same key.
                let lost = made.filter { announcement in
                    guard let timeline = windows.onLostTimeline(announcement.at) else { return false }
                    return expected.allSatisfy { $0.at > timeline.remadeAfter }
                }.count
                let extra = made.count - expected.count
                count.remadeAfterLostCommits += min(lost, extra)
                if extra > lost {
                    count.doubled += extra - lost
                    count.note("doubled", key)
                }
            }
        }
        for (key, made) in seen.sorted(by: { $0.key < $1.key }) where rows[key] == nil {
            for announcement in made {
                if windows.onLostTimeline(announcement.at) != nil {
                    count.lostWithTimeline += 1
                } else {
                    count.phantom += 1
                    count.note("phantom", key)
                }
            }
        }
        return count
    }

    /// A row written around a worker's SIGKILL may have lost its announcement with the worker;
    /// a webhook call also when the worker that logged the alert was killed soon after (its
    /// queued deliveries die with it).
    private func excusedMissing(_ stream: Stream, key: String, row: NemesisExpectation.Row, alertLines: [NemesisAnnouncement]) -> Bool {
        if windows.killedAround(commitAt: row.at) { return true }
        guard stream == .webhook else { return false }
        return alertLines.contains { line in
            line.key == key && line.worker.map { windows.killed($0, within: line.at...(line.at + windows.deliveryWindow)) } == true
        }
    }

    /// Doubles or drops one announcement of `stream` that is counted once with no excuse in
    /// reach, so the tampering cannot be explained away. Returns its key.
    private func tamper(_ observed: inout [NemesisAnnouncement], _ tampering: Tampering) -> String? {
        let stream: Stream
        switch tampering {
        case .none: return nil
        case .double(let chosen), .drop(let chosen): stream = chosen
        }
        let rows = Dictionary(grouping: expectation.rows[stream] ?? [], by: \.key)
        let alertLines = observed.filter { $0.stream == .alertLine && !$0.repeated }
        let firsts = Dictionary(grouping: observed.indices.filter { observed[$0].stream == stream && !observed[$0].repeated && observed[$0].key != nil },
                                by: { observed[$0].key! })
        let candidate = firsts.keys.sorted().first { key in
            guard let expected = rows[key], expected.count == 1, firsts[key]?.count == 1, let index = firsts[key]?.first else { return false }
            return !excusedMissing(stream, key: key, row: expected[0], alertLines: alertLines)
                && windows.onLostTimeline(observed[index].at) == nil
        }
        guard let key = candidate, let index = firsts[key]?.first else { return nil }
        if case .double = tampering { observed.append(observed[index]) } else { observed.remove(at: index) }
        return key
    }
}
