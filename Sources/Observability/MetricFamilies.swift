import Synchronization

/// What the registry needs from every family: identity for idempotent registration and rendering.
protocol MetricFamily: AnyObject, Sendable {
    var name: String { get }
    var labelNames: [String] { get }
    func render(into out: inout String)
}

/// Children by label values, created on first use and cached: callers on hot paths may also keep
/// the returned child and skip the lookup altogether.
final class LabeledChildren<Child: Sendable>: Sendable {
    let metricName: String
    let labelNames: [String]
    private let make: @Sendable () -> Child
    private let children = Mutex<[[String]: Child]>([:])
    /// The single child of a label-less family, created eagerly so it renders as 0 from the start.
    private let unlabeled: Child?

    init(metricName: String, labelNames: [String], make: @escaping @Sendable () -> Child) {
        validateNames(metricName: metricName, labelNames: labelNames)
        self.metricName = metricName
        self.labelNames = labelNames
        self.make = make
        unlabeled = labelNames.isEmpty ? make() : nil
    }

    func child(_ values: [String]) -> Child {
        if let unlabeled, values.isEmpty { return unlabeled }
        precondition(values.count == labelNames.count,
                     "\(metricName) takes labels \(labelNames), got \(values.count) values")
        return children.withLock { cache in
            if let existing = cache[values] { return existing }
            let created = make()
            cache[values] = created
            return created
        }
    }

    /// The label-less child; labelled families must go through `labels(...)`.
    var only: Child {
        guard let unlabeled else { preconditionFailure("\(metricName) has labels \(labelNames); use labels(...)") }
        return unlabeled
    }

    /// All children sorted by label values, for deterministic output.
    func sorted() -> [(labelValues: [String], child: Child)] {
        if let unlabeled { return [([], unlabeled)] }
        let all = children.withLock { $0.map { (labelValues: $0.key, child: $0.value) } }
        return all.sorted { $0.labelValues.lexicographicallyPrecedes($1.labelValues) }
    }
}

public final class CounterFamily: MetricFamily {
    public let name: String
    let help: String
    private let children: LabeledChildren<Counter>

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        children = LabeledChildren(metricName: name, labelNames: labelNames) { Counter() }
    }

    public var labelNames: [String] { children.labelNames }
    public func labels(_ values: String...) -> Counter { children.child(values) }
    public func inc() { children.only.inc() }
    public func add(_ amount: Double) { children.only.add(amount) }

    func render(into out: inout String) {
        appendHeader(name: name, help: help, type: "counter", into: &out)
        for (values, counter) in children.sorted() {
            appendSample(name, labelNames: labelNames, values: values, value: counter.value, into: &out)
        }
    }
}

public final class GaugeFamily: MetricFamily {
    public let name: String
    let help: String
    private let children: LabeledChildren<Gauge>

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        children = LabeledChildren(metricName: name, labelNames: labelNames) { Gauge() }
    }

    public var labelNames: [String] { children.labelNames }
    public func labels(_ values: String...) -> Gauge { children.child(values) }
    public func set(_ value: Double) { children.only.set(value) }
    public func inc() { children.only.inc() }
    public func dec() { children.only.dec() }
    public func add(_ delta: Double) { children.only.add(delta) }

    func render(into out: inout String) {
        appendHeader(name: name, help: help, type: "gauge", into: &out)
        for (values, gauge) in children.sorted() {
            appendSample(name, labelNames: labelNames, values: values, value: gauge.value, into: &out)
        }
    }
}

public final class HistogramFamily: MetricFamily {
    /// Prometheus client defaults, in seconds.
    public static let defaultBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    public let name: String
    let help: String
    public let upperBounds: [Double]
    private let children: LabeledChildren<Histogram>

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        precondition(!labelNames.contains("le"), "\"le\" is reserved for histogram buckets (\(name))")
        // +Inf is always appended by rendering; accept it in the list but do not store it twice.
        let bounds = buckets.filter { $0 != .infinity }
        precondition(bounds.allSatisfy(\.isFinite) && zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 },
                     "histogram \(name) buckets must be finite and strictly increasing")
        self.name = name
        self.help = help
        upperBounds = bounds
        children = LabeledChildren(metricName: name, labelNames: labelNames) { Histogram(upperBounds: bounds) }
    }

    public var labelNames: [String] { children.labelNames }
    public func labels(_ values: String...) -> Histogram { children.child(values) }
    public func observe(_ value: Double) { children.only.observe(value) }
    public func observe(_ duration: Duration) { children.only.observe(duration) }

    func render(into out: inout String) {
        appendHeader(name: name, help: help, type: "histogram", into: &out)
        let bucketLabels = labelNames + ["le"]
        let bounds = upperBounds.map(formatNumber) + ["+Inf"]
        for (values, histogram) in children.sorted() {
            let snapshot = histogram.snapshot()
            var cumulative: UInt64 = 0
            for (bound, count) in zip(bounds, snapshot.bucketCounts) {
                cumulative += count
                appendSample(name + "_bucket", labelNames: bucketLabels, values: values + [bound],
                             value: Double(cumulative), into: &out)
            }
            appendSample(name + "_sum", labelNames: labelNames, values: values, value: snapshot.sum, into: &out)
            appendSample(name + "_count", labelNames: labelNames, values: values,
                         value: Double(snapshot.count), into: &out)
        }
    }
}

/// A gauge read at render time from a closure, e.g. queue depth sampled from the database elsewhere.
final class FunctionGaugeFamily: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    private let sample: @Sendable () -> [([String], Double)]

    init(name: String, help: String, labelNames: [String], sample: @escaping @Sendable () -> [([String], Double)]) {
        validateNames(metricName: name, labelNames: labelNames)
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.sample = sample
    }

    func render(into out: inout String) {
        appendHeader(name: name, help: help, type: "gauge", into: &out)
        // Samples with the wrong number of label values are dropped rather than crashing a scrape.
        let samples = sample().filter { $0.0.count == labelNames.count }
            .sorted { $0.0.lexicographicallyPrecedes($1.0) }
        for (values, value) in samples {
            appendSample(name, labelNames: labelNames, values: values, value: value, into: &out)
        }
    }
}
