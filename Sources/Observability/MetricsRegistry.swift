import Synchronization

/// All metrics of the process, rendered for `GET /metrics`.
///
/// Registration is idempotent by name, so independent components can ask for the same family.
/// Asking for an existing name with another type or other label names is a programmer error.
public final class MetricsRegistry: Sendable {
    public static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

    private let families = Mutex<[String: any MetricFamily]>([:])

    public init() {}

    // Results are discardable: registering early makes a family (HELP/TYPE, or 0) visible before first use.

    @discardableResult
    public func counter(_ name: String, help: String, labelNames: [String] = []) -> CounterFamily {
        register(name, labelNames) { CounterFamily(name: name, help: help, labelNames: labelNames) }
    }

    @discardableResult
    public func gauge(_ name: String, help: String, labelNames: [String] = []) -> GaugeFamily {
        register(name, labelNames) { GaugeFamily(name: name, help: help, labelNames: labelNames) }
    }

    @discardableResult
    public func histogram(
        _ name: String, help: String, labelNames: [String] = [],
        buckets: [Double] = HistogramFamily.defaultBuckets
    ) -> HistogramFamily {
        let family = register(name, labelNames) {
            HistogramFamily(name: name, help: help, labelNames: labelNames, buckets: buckets)
        }
        precondition(family.upperBounds == buckets.filter { $0 != .infinity },
                     "histogram \(name) already registered with other buckets")
        return family
    }

    /// A gauge whose samples come from `sample` at every render: `[(labelValues, value)]`.
    /// Registering the same name again replaces the sampler (the latest owner wins).
    /// `sample` runs outside the registry lock and may be called from any thread.
    public func gaugeFunction(
        _ name: String, help: String, labelNames: [String] = [],
        _ sample: @escaping @Sendable () -> [([String], Double)]
    ) {
        let family = FunctionGaugeFamily(name: name, help: help, labelNames: labelNames, sample: sample)
        families.withLock { all in
            if let existing = all[name], !(existing is FunctionGaugeFamily) {
                preconditionFailure("metric \(name) already registered as \(type(of: existing))")
            }
            all[name] = family
        }
    }

    private func register<Family: MetricFamily>(
        _ name: String, _ labelNames: [String], make: () -> Family
    ) -> Family {
        families.withLock { all in
            guard let existing = all[name] else {
                let created = make()
                all[name] = created
                return created
            }
            guard let same = existing as? Family else {
                preconditionFailure("metric \(name) already registered as \(type(of: existing))")
            }
            precondition(same.labelNames == labelNames,
                         "metric \(name) already registered with labels \(same.labelNames)")
            return same
        }
    }

    /// The text exposition of every family, sorted by name.
    public func render() -> String {
        // Snapshot under the lock, render outside it: function gauges may be slow or touch the registry.
        let snapshot = families.withLock { $0.values.sorted { $0.name < $1.name } }
        var out = ""
        for family in snapshot {
            family.render(into: &out)
        }
        return out
    }
}
