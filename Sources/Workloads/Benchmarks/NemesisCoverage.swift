/// What the run put the fleet through: each kind of the schedule, how often it was applied
/// and how often it took effect (a kill that found its worker running, a freeze that found
/// connections open, a cut that found a COMMIT reply, ...). A run that left a kind out, fed
/// nothing or injected nothing proves nothing, so it fails.
struct NemesisCoverage: Sendable {
    struct Row: Sendable {
        let kind: NemesisFaultKind
        var applied = 0
        var tookEffect = 0
    }

    var rows: [Row]
    /// Kinds of the schedule never applied, because the run ended first.
    var notReached: [NemesisFaultKind] = []
    var receiptsFed = 0

    init(kinds: [NemesisFaultKind], records: [NemesisFaultRecord], receiptsFed: Int) {
        rows = kinds.map { kind in
            var row = Row(kind: kind)
            for record in records where record.planned.kind == kind {
                row.applied += 1
                if record.tookEffect { row.tookEffect += 1 }
            }
            return row
        }
        notReached = rows.filter { $0.applied == 0 }.map(\.kind)
        self.receiptsFed = receiptsFed
    }

    var faultsInjected: Int { rows.reduce(0) { $0 + $1.tookEffect } }
    /// Kinds applied that never took effect.
    var withoutEffect: [NemesisFaultKind] { rows.filter { $0.applied > 0 && $0.tookEffect == 0 }.map(\.kind) }

    var passed: Bool { receiptsFed > 0 && faultsInjected > 0 && notReached.isEmpty && withoutEffect.isEmpty }

    /// Why the coverage fails, in words (empty when it passes).
    var problems: [String] {
        var problems: [String] = []
        if receiptsFed == 0 { problems.append("no receipt was fed") }
        if faultsInjected == 0 { problems.append("no fault took effect") }
        if !notReached.isEmpty { problems.append("never applied: " + notReached.map(\.rawValue).joined(separator: ",")) }
        if !withoutEffect.isEmpty { problems.append("applied without effect: " + withoutEffect.map(\.rawValue).joined(separator: ",")) }
        return problems
    }

    func report() {
        for row in rows {
            BenchReport.line("nemesis", "coverage", [("kind", row.kind.rawValue), ("applied", "\(row.applied)"),
                                                     ("took_effect", "\(row.tookEffect)"), ("covered", row.tookEffect > 0 ? "yes" : "no")])
        }
    }
}
