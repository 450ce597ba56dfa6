import AppStore
import AppleSim
import Foundation
import HTTP
import StoreKitCrypto
import XCTest

/// The App Store Connect API client against apple-sim: a team-key token (aud appstoreconnect-v1,
/// no bid, at most 20 minutes), the report gzip'd under Apple's columns, and a day not yet published
/// answered as `notYetAvailable`, not as an error.
final class SalesReportClientTests: XCTestCase {
    private func client(_ h: SimHarness, key: ES256PrivateKey? = nil, vendor: String = "85000001") throws -> SalesReportClient {
        try SalesReportClient(configuration: AppStoreConnectConfiguration(
            baseURL: h.sim.baseURL, issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, vendorNumber: vendor,
            privateKey: key ?? h.sim.serverAPI.apiPrivateKey, requestTimeout: .seconds(5)), transport: h.transport)
    }

    func testTheReportCountsWhatTheSimulatorAnsweredAsPaidAndRefunded() async throws {
        let h = try SimHarness.start()
        let yesterday = ReportDay(containing: Date().addingTimeInterval(-86_400))
        let noon = yesterday.start.addingTimeInterval(12 * 3600)
        let ms = Int64(noon.timeIntervalSince1970 * 1000)
        let receipt = SimReceipt(bundleID: Fixtures.bundleID, transactions: [
            .init(transactionID: "r-1", productID: "coins_100", purchaseDateMs: ms),
            .init(transactionID: "r-2", productID: "coins_100", purchaseDateMs: ms),
            .init(transactionID: "r-3", productID: "coins_500", purchaseDateMs: ms, cancellationDateMs: ms + 3_600_000),
        ]).mint()
        _ = try await h.verify(receipt)
        _ = try await h.verify(receipt)  // answered twice, sold once
        h.sim.serverAPI.injectUnuploadedSales(productID: "coins_100", count: 3, purchaseDate: noon)

        let download = await (try client(h)).dailySummary(for: yesterday)
        guard case .success(.available(let report)) = download else { return XCTFail("\(download)") }
        XCTAssertEqual(report.inAppUnits, [.init(productID: "coins_100", units: 5, returns: 0),
                                           .init(productID: "coins_500", units: 1, returns: 1)])

        let today = await (try client(h)).dailySummary(for: ReportDay(containing: Date()))
        XCTAssertEqual(today, .success(.notYetAvailable), "today is not over in Cupertino")
        h.sim.serverAPI.salesBook.reportDelay = 2 * 86_400
        let delayed = await (try client(h)).dailySummary(for: yesterday)
        XCTAssertEqual(delayed, .success(.notYetAvailable), "the availability delay holds the report back")
        await h.stop()
    }

    /// Apple answers 404 NOT_FOUND for a day it has no report for; past 8 a.m. Pacific the next day that
    /// is a day with no sales, before it (or when Apple says "not available yet") the report is awaited.
    func testAMissingReportIsADayWithNoSalesOnlyOnceItIsDue() async throws {
        let day = ReportDay("2026-03-07")!  // the clocks spring forward that night in Cupertino
        XCTAssertEqual(day.reportDueAt, Date(timeIntervalSince1970: 1_772_982_000), "8 a.m. PDT on March 8 is 15:00 UTC")
        let noSales = ["There were no sales for the date specified."]
        XCTAssertEqual(SalesReportClient.missingReport(day, details: noSales, now: day.end.addingTimeInterval(3600)), .notYetAvailable)
        XCTAssertEqual(SalesReportClient.missingReport(day, details: noSales, now: day.reportDueAt), .noSales)
        XCTAssertEqual(SalesReportClient.missingReport(day, details: ["Report is not available yet. Daily reports are available by 8 am."],
                                                       now: day.reportDueAt.addingTimeInterval(86_400)), .notYetAvailable)

        let h = try SimHarness.start()
        let past = ReportDay(containing: Date().addingTimeInterval(-3 * 86_400))
        let none = await (try client(h)).dailySummary(for: past)
        XCTAssertEqual(none, .success(.noSales), "apple-sim sold nothing that day")
        h.sim.serverAPI.salesBook.reportDelay = 10 * 86_400
        let held = await (try client(h)).dailySummary(for: past)
        XCTAssertEqual(held, .success(.notYetAvailable), "apple-sim says the report is not available yet")
        await h.stop()
    }

    func testTheSimulatorChecksTheTeamKeyTokenAsAppleDoes() async throws {
        let h = try SimHarness.start()
        let day = ReportDay(containing: Date().addingTimeInterval(-86_400))
        let stranger = try await (try client(h, key: try ES256PrivateKey.generate())).dailySummary(for: day)
        guard case .failure(let refused) = stranger else { return XCTFail("\(stranger)") }
        XCTAssertEqual(refused.kind, .configError)

        func status(_ claims: AppStoreConnectJWTClaims) async throws -> Int {
            let token = try JWSCompact.sign(header: JWSHeader(alg: "ES256", kid: SimServerAPI.defaultKeyID, typ: "JWT"),
                                            payload: Array(try JSONEncoder().encode(claims)), key: h.sim.serverAPI.apiPrivateKey)
            var url = URLComponents(url: h.sim.baseURL.appendingPathComponent("v1/salesReports"), resolvingAgainstBaseURL: false)!
            url.queryItems = [.init(name: "filter[frequency]", value: "DAILY"), .init(name: "filter[reportType]", value: "SALES"),
                              .init(name: "filter[reportSubType]", value: "SUMMARY"), .init(name: "filter[vendorNumber]", value: "1"),
                              .init(name: "filter[reportDate]", value: day.description)]
            let request = HTTPClientRequest(url: url.url!, headers: [("Authorization", "Bearer \(token)")])
            return try await h.transport.send(request, timeout: .seconds(5)).status
        }
        let now = Int64(Date().timeIntervalSince1970)
        let wrongAudience = try await status(.init(iss: SimServerAPI.defaultIssuerID, iat: now, exp: now + 600, aud: "appstoreconnect-v2"))
        XCTAssertEqual(wrongAudience, 401)
        let tooLong = try await status(.init(iss: SimServerAPI.defaultIssuerID, iat: now, exp: now + 1260, aud: "appstoreconnect-v1"))
        XCTAssertEqual(tooLong, 401, "Apple refuses team-key tokens that live over 20 minutes")
        let fine = try await status(.init(iss: SimServerAPI.defaultIssuerID, iat: now, exp: now + 1200, aud: "appstoreconnect-v1"))
        XCTAssertEqual(fine, 404, "accepted: no sales that day")
        await h.stop()
    }
}
