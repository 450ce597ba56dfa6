import AppStore
import AppleSim
import XCTest

/// The daily SALES SUMMARY report is read strictly: Apple's 28 columns in order, whole Units, the
/// report's own day; only in-app product types count, summed over countries, returns apart.
final class SalesReportParserTests: XCTestCase {
    let day = ReportDay("2026-11-20")!

    /// The product is the SKU column (an in-app purchase's Product ID), not Apple Identifier nor Parent Identifier.
    func testInAppRowsAreSummedPerProductOverCountriesWithReturnsApart() throws {
        let text = SimSalesReportText.text([
            .init(productID: "coins_100", productType: "IA1", units: 7, countryCode: "US"),
            .init(productID: "coins_100", productType: "IA1", units: 3, countryCode: "DE"),
            .init(productID: "coins_100", productType: "IA1", units: -2, countryCode: "US"),
            .init(productID: "pro_monthly", productType: "IAY", units: 4),
            .init(productID: "pro_mac", productType: "IAY-M", units: 1),
            .init(productID: "legacy_mac", productType: "FI1", units: 1),
            .init(productID: "com.example.app", productType: "1F", units: 500),   // app downloads: not in-app
            .init(productID: "coins_100", productType: "IA3", units: 9),          // restores move no money
        ], day: day)
        let report = try SalesSummaryReport.parse(text, day: day)
        XCTAssertEqual(report.rows.count, 8)
        XCTAssertEqual(report.inAppUnits, [
            .init(productID: "coins_100", units: 10, returns: 2),
            .init(productID: "legacy_mac", units: 1, returns: 0),
            .init(productID: "pro_mac", units: 1, returns: 0),
            .init(productID: "pro_monthly", units: 4, returns: 0),
        ])
    }

    func testAnythingUnexpectedIsRefusedWithItsLine() {
        let good = SimSalesReportText.text([.init(productID: "coins_100", units: 1)], day: day)
        func refused(_ text: String, day: ReportDay? = nil) -> Int? {
            do { _ = try SalesSummaryReport.parse(text, day: day); return nil } catch { return error.line }
        }
        XCTAssertNil(refused(good, day: day))
        XCTAssertEqual(refused(""), 1)
        XCTAssertEqual(refused(good.replacingOccurrences(of: "Units\t", with: "Quantity\t")), 1)
        XCTAssertEqual(refused(good.replacingOccurrences(of: "\tIA1\t1\t", with: "\tIA1\tone\t")), 2)
        XCTAssertEqual(refused(good.replacingOccurrences(of: "\tIA1\t1\t", with: "\tIA1\t1.5\t")), 2)
        XCTAssertNil(refused(good.replacingOccurrences(of: "\tIA1\t1\t", with: "\tIA1\t1.00\t")), "Units is DECIMAL(18,2) in Apple's reference")
        XCTAssertEqual(refused(good.replacingOccurrences(of: "\tIA1\t1\t", with: "\tIA1\t.00\t")), 2)
        XCTAssertEqual(refused(good.replacingOccurrences(of: "\tIA1\t1\t", with: "\tIA1\t1\textra\t")), 2)
        XCTAssertEqual(refused(good + "\n"), 3, "a blank line inside the report")
        XCTAssertEqual(refused(good, day: ReportDay("2026-11-21")), 2, "a row of another day")
        XCTAssertEqual(refused(good.replacingOccurrences(of: "11/20/2026", with: "2026-11-20")), 2)
    }

    func testPacificDaysAndReportDates() throws {
        XCTAssertNil(ReportDay("2026-02-30"))
        XCTAssertNil(ReportDay("2026-2-3"))
        XCTAssertEqual(SalesReportLayout.reportDate(ReportDay("2026-03-08")!), "03/08/2026")
        // The spring-forward day is 23 hours long; 06:59 UTC on the 9th (PDT) is still the 8th in Los Angeles.
        let dst = ReportDay("2026-03-08")!
        XCTAssertEqual(dst.end.timeIntervalSince(dst.start), 23 * 3600)
        XCTAssertEqual(ReportDay(containing: Date(timeIntervalSince1970: 1_773_039_540)).description, "2026-03-08")
    }

    func testGzipRoundTripsAndRefusesDamage() throws {
        let text = Array(String(repeating: "APPLE\tUS\tcoins_100\n", count: 20_000).utf8)
        let packed = try Gzip.compress(text)
        XCTAssertLessThan(packed.count, text.count / 10)
        XCTAssertEqual(try Gzip.decompress(packed), text)
        XCTAssertThrowsError(try Gzip.decompress(Array(packed.dropLast(4))))
        XCTAssertThrowsError(try Gzip.decompress(packed + [0]))
        XCTAssertThrowsError(try Gzip.decompress(Array("not gzip".utf8)))
        XCTAssertThrowsError(try Gzip.decompress(packed, limit: 1000))
    }
}
