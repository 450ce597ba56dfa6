import TestSupport
import XCTest
@testable import Observability

final class MetricsConcurrencyTests: XCTestCase {
    func testHundredTasksThousandIncrementsEachIsExact() async throws {
        let registry = MetricsRegistry()
        let total = registry.counter("hits_total", help: "h")
        let labelled = registry.counter("by_task_total", help: "h", labelNames: ["parity"])
        let gauge = registry.gauge("level", help: "g")
        let histogram = registry.histogram("obs_seconds", help: "h", labelNames: ["parity"], buckets: [0.5])
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<100 {
                group.addTask {
                    let parity = task.isMultiple(of: 2) ? "even" : "odd"
                    for i in 0..<1_000 {
                        total.inc()
                        labelled.labels(parity).add(0.5)
                        if i.isMultiple(of: 2) { gauge.inc() } else { gauge.dec() }
                        histogram.labels(parity).observe(i.isMultiple(of: 4) ? 0.25 : 1)
                        if i == 500 { _ = registry.render() }  // rendering while writers run
                    }
                }
            }
        }
        XCTAssertEqual(total.labelNames, [])
        let text = registry.render()
        let families = try StrictPrometheusParser.parse(text)
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            families.flatMap(\.samples).first { $0.name == name && $0.labels == labels }?.value
        }
        XCTAssertEqual(value("hits_total"), 100_000)
        XCTAssertEqual(value("by_task_total", ["parity": "even"]), 25_000)
        XCTAssertEqual(value("by_task_total", ["parity": "odd"]), 25_000)
        XCTAssertEqual(value("level"), 0)
        XCTAssertEqual(value("obs_seconds_count", ["parity": "odd"]), 50_000)
        XCTAssertEqual(value("obs_seconds_bucket", ["parity": "odd", "le": "0.5"]), 12_500)
        XCTAssertEqual(value("obs_seconds_sum", ["parity": "even"]), 12_500 * 0.25 + 37_500)
    }
}
