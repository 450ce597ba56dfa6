import TestSupport
import XCTest
@testable import Observability

final class MetricsRenderTests: XCTestCase {
    func testExactRenderOfAllKinds() throws {
        let registry = MetricsRegistry()
        let finished = registry.counter("iap_jobs_finished_total", help: "Jobs finished.", labelNames: ["outcome"])
        finished.labels("retry").inc()
        finished.labels("credited").add(2)
        finished.labels("credited").add(-5)  // ignored
        registry.counter("iap_jobs_claimed_total", help: "Jobs claimed.").inc()
        let inflight = registry.gauge("iap_inflight_verifications", help: "In flight.")
        inflight.inc(); inflight.inc(); inflight.dec(); inflight.add(0.5)
        registry.gauge("iap_alerts_open", help: "Open alerts.", labelNames: ["kind"])  // no children yet
        let duration = registry.histogram("iap_apple_request_duration_seconds", help: "Apple latency.",
                                          labelNames: ["endpoint"], buckets: [0.1, 1, 2.5])
        duration.labels("verify").observe(0.05)
        duration.labels("verify").observe(0.1)
        duration.labels("verify").observe(2)
        duration.labels("verify").observe(.milliseconds(7_000))
        registry.gaugeFunction("iap_jobs", help: "Jobs by state.", labelNames: ["state"]) {
            [(["queued"], 12), (["done"], 1e20), (["bad", "extra"], 1)]
        }
        let text = registry.render()
        XCTAssertEqual(text, """
            # HELP iap_alerts_open Open alerts.
            # TYPE iap_alerts_open gauge
            # HELP iap_apple_request_duration_seconds Apple latency.
            # TYPE iap_apple_request_duration_seconds histogram
            iap_apple_request_duration_seconds_bucket{endpoint="verify",le="0.1"} 2
            iap_apple_request_duration_seconds_bucket{endpoint="verify",le="1"} 2
            iap_apple_request_duration_seconds_bucket{endpoint="verify",le="2.5"} 3
            iap_apple_request_duration_seconds_bucket{endpoint="verify",le="+Inf"} 4
            iap_apple_request_duration_seconds_sum{endpoint="verify"} 9.15
            iap_apple_request_duration_seconds_count{endpoint="verify"} 4
            # HELP iap_inflight_verifications In flight.
            # TYPE iap_inflight_verifications gauge
            iap_inflight_verifications 1.5
            # HELP iap_jobs Jobs by state.
            # TYPE iap_jobs gauge
            iap_jobs{state="done"} 1e+20
            iap_jobs{state="queued"} 12
            # HELP iap_jobs_claimed_total Jobs claimed.
            # TYPE iap_jobs_claimed_total counter
            iap_jobs_claimed_total 1
            # HELP iap_jobs_finished_total Jobs finished.
            # TYPE iap_jobs_finished_total counter
            iap_jobs_finished_total{outcome="credited"} 2
            iap_jobs_finished_total{outcome="retry"} 1

            """)
        let families = try StrictPrometheusParser.parse(text)
        XCTAssertEqual(families.map(\.name), families.map(\.name).sorted())
        XCTAssertEqual(families.first { $0.name == "iap_alerts_open" }?.samples.count, 0)
    }

    func testEscapingOfLabelValuesAndHelp() throws {
        let registry = MetricsRegistry()
        let family = registry.counter("weird_total", help: "Back\\slash and\nnewline \"quoted\"", labelNames: ["a", "b"])
        family.labels("q\"uote", "back\\slash\nnl").inc()
        family.labels("", "ünïcode").add(0.25)
        let text = registry.render()
        XCTAssertTrue(text.contains(#"# HELP weird_total Back\\slash and\nnewline "quoted""#), text)
        XCTAssertTrue(text.contains(#"weird_total{a="q\"uote",b="back\\slash\nnl"} 1"#), text)
        let samples = try XCTUnwrap(StrictPrometheusParser.parse(text).first).samples
        XCTAssertEqual(samples.map(\.labels), [["a": "", "b": "ünïcode"], ["a": "q\"uote", "b": "back\\slash\nnl"]])
        XCTAssertEqual(samples.map(\.value), [0.25, 1])
        XCTAssertEqual(try StrictPrometheusParser.parse(text).first?.help, "Back\\slash and\nnewline \"quoted\"")
    }

    func testDefaultBucketsAndSpecialValues() throws {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("latency_seconds", help: "h")
        for value in [0.001, 0.02, 0.3, 4, 60, -1, .nan] { histogram.observe(value) }
        let gauge = registry.gauge("special", help: "s", labelNames: ["v"])
        gauge.labels("inf").set(.infinity)
        gauge.labels("nan").set(.nan)
        gauge.labels("neg").set(-.infinity)
        gauge.labels("small").set(1e-7)
        let text = registry.render()
        let families = try StrictPrometheusParser.parse(text)
        let buckets = families[0].samples.filter { $0.name == "latency_seconds_bucket" }
        XCTAssertEqual(buckets.map { $0.labels["le"]! },
                       ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"])
        XCTAssertEqual(buckets.last?.value, 6)  // NaN ignored
        XCTAssertEqual(histogram.labels().count, 6)
        XCTAssertTrue(text.contains("special{v=\"inf\"} +Inf\n"))
        XCTAssertTrue(text.contains("special{v=\"nan\"} NaN\n"))
        XCTAssertTrue(text.contains("special{v=\"neg\"} -Inf\n"))
        XCTAssertTrue(text.contains("special{v=\"small\"} 1e-07\n"))
    }

    func testRegistrationIsIdempotentAndChildrenAreCached() {
        let registry = MetricsRegistry()
        let first = registry.counter("c_total", help: "c", labelNames: ["k"])
        let second = registry.counter("c_total", help: "other help is ignored", labelNames: ["k"])
        XCTAssertTrue(first === second)
        XCTAssertTrue(first.labels("x") === second.labels("x"))
        first.labels("x").inc()
        XCTAssertEqual(second.labels("x").value, 1)
        XCTAssertTrue(registry.histogram("h", help: "h", buckets: [1]) === registry.histogram("h", help: "h", buckets: [1, .infinity]))

        registry.gaugeFunction("depth", help: "d") { [([], 1)] }
        registry.gaugeFunction("depth", help: "d") { [([], 2)] }  // latest sampler wins
        XCTAssertTrue(registry.render().contains("\ndepth 2\n"))
    }

    func testEmptyRegistryAndContentType() throws {
        XCTAssertEqual(MetricsRegistry().render(), "")
        XCTAssertEqual(MetricsRegistry.prometheusContentType, "text/plain; version=0.0.4; charset=utf-8")
    }

    func testFunctionGaugeIsSampledAtEachRender() {
        let registry = MetricsRegistry()
        let depth = Counter()  // any thread-safe box
        registry.gaugeFunction("queue_depth", help: "d") { [([], depth.value)] }
        XCTAssertTrue(registry.render().contains("queue_depth 0\n"))
        depth.add(41)
        XCTAssertTrue(registry.render().contains("queue_depth 41\n"))
    }
}
