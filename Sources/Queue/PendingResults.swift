/// A verification result as the completer queues it.
protocol PendingResult {
    /// It has work to settle (a credit: several statements) inside the completion transaction.
    var settles: Bool { get }
}

/// Results waiting to be written, and how many batches are being written now (held under the
/// completer's lock).
///
/// Results with nothing to settle are taken when no write is in flight, or when a whole batch
/// waits: those that arrive during a write gather into the next batch instead of each loop
/// writing the few it finds (a completion costs a statement, a commit and a flush whatever its
/// size). Results to settle are taken by any free loop, so settlements run side by side on their
/// connections.
struct PendingResults<Item: PendingResult> {
    private(set) var items: [Item] = []
    /// How many of `items` have work to settle.
    private(set) var settling = 0
    /// Writes in flight, the lingering one included.
    private(set) var writing = 0
    /// A loop holds the next write's turn while results gather (`QueueConfiguration.completionLinger`).
    private(set) var lingering = false

    /// A free completion loop should take a batch now.
    func due(limit: Int) -> Bool { !items.isEmpty && (writing == 0 || items.count >= limit || settling > 0) }

    mutating func append(_ item: Item) {
        items.append(item)
        if item.settles { settling += 1 }
    }

    /// The next batch (counted as a write in flight until `finished`), or none when nothing is
    /// due. With `linger`, a part batch of results with nothing to settle and no write in flight
    /// is not taken yet: the caller is told to linger, holds the turn, and calls `takeAfterLingering`.
    mutating func take(upTo limit: Int, linger: Bool = false) -> (batch: [Item], linger: Bool) {
        guard due(limit: limit) else { return ([], false) }
        writing += 1
        if linger && items.count < limit && settling == 0 && !lingering {
            lingering = true
            return ([], true)
        }
        return (removeFirst(limit), false)
    }

    /// What gathered while the caller lingered (none: its turn is given back).
    mutating func takeAfterLingering(upTo limit: Int) -> [Item] {
        lingering = false
        let batch = removeFirst(limit)
        if batch.isEmpty { writing -= 1 }
        return batch
    }

    /// A batch taken by `take` or `takeAfterLingering` was written (or given up).
    mutating func finished() { writing -= 1 }

    private mutating func removeFirst(_ limit: Int) -> [Item] {
        var batch: [Item]
        if items.count <= limit {
            // The usual case: everything waiting is one batch; hand the array over, copy nothing.
            batch = []
            swap(&batch, &items)
        } else {
            batch = Array(items[..<limit])
            items.removeFirst(limit)
        }
        if settling > 0 { settling -= batch.reduce(0) { $1.settles ? $0 + 1 : $0 } }
        return batch
    }
}
