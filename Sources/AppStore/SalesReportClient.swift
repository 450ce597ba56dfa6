import Foundation
import HTTP

/// What a day's report download gave.
public enum SalesReportDownload: Sendable, Equatable {
    case available(SalesSummaryReport)
    /// Apple has not published the day yet: try again later, not an error.
    case notYetAvailable
    /// The day is past Apple's publication time and Apple has no report for it: a Summary Sales report
    /// exists only for a day with at least one unit sold (App Store Connect Help, "Sales and Trends reports
    /// availability"), so this is a day with no sales, reconciled as such.
    case noSales
}

/// App Store Connect API "Download Sales and Trends Reports" (`GET /v1/salesReports`) for the daily
/// SALES SUMMARY report. Never logs; the token is minted per request and appears only in its header.
public final class SalesReportClient: Sendable {
    public let configuration: AppStoreConnectConfiguration
    private let transport: HTTPTransport

    public init(configuration: AppStoreConnectConfiguration, transport: HTTPTransport? = nil) throws {
        try configuration.validate()
        self.configuration = configuration
        self.transport = try AppleTransport.make(transport)
    }

    public func dailySummary(for day: ReportDay) async -> Result<SalesReportDownload, AppStoreAPIError> {
        await dailySummary(for: day, now: Date())
    }

    /// `now` decides what a missing report means (see `missingReport`).
    public func dailySummary(for day: ReportDay, now: Date) async -> Result<SalesReportDownload, AppStoreAPIError> {
        let token: String
        do {
            token = try AppStoreConnectJWT.make(issuerID: configuration.issuerID, keyID: configuration.keyID, key: configuration.privateKey)
        } catch {
            return .failure(AppStoreAPIError(.configError, reason: "token", status: 0, detail: "cannot sign the App Store Connect API token"))
        }
        let request = HTTPClientRequest(method: "GET", url: Self.url(configuration.baseURL, query: Self.query(day, vendor: configuration.vendorNumber)),
                                        headers: [("Authorization", "Bearer \(token)"), ("Accept", "application/a-gzip")], body: [])
        let response: HTTPClientResponse
        do {
            response = try await transport.send(request, timeout: configuration.requestTimeout)
        } catch {
            let failure = AppleTransport.describe(error)
            return .failure(AppStoreAPIError(.retry(after: nil), reason: failure.reason, status: nil, detail: failure.reason))
        }
        return Self.read(response, day: day, now: now)
    }

    /// The filters, in the order Apple documents them.
    static func query(_ day: ReportDay, vendor: String) -> [URLQueryItem] {
        [URLQueryItem(name: "filter[frequency]", value: "DAILY"), URLQueryItem(name: "filter[reportDate]", value: day.description),
         URLQueryItem(name: "filter[reportSubType]", value: "SUMMARY"), URLQueryItem(name: "filter[reportType]", value: "SALES"),
         URLQueryItem(name: "filter[vendorNumber]", value: vendor), URLQueryItem(name: "filter[version]", value: "1_0")]
    }

    static func read(_ response: HTTPClientResponse, day: ReportDay, now: Date = Date()) -> Result<SalesReportDownload, AppStoreAPIError> {
        switch response.status {
        case 200:
            do {
                let text = try Gzip.decompress(response.body)
                return .success(.available(try SalesSummaryReport.parse(String(decoding: text, as: UTF8.self), day: day)))
            } catch let error as Gzip.Failure {
                return .failure(AppStoreAPIError(.retry(after: nil), reason: "malformed_response", status: 200, detail: error.description))
            } catch {
                return .failure(AppStoreAPIError(.rejected, reason: "report_unreadable", status: 200, detail: "\(error)"))
            }
        case 404 where AppStoreConnectErrors.codes(in: response.body).contains("NOT_FOUND"):
            return .success(missingReport(day, details: AppStoreConnectErrors.details(in: response.body), now: now))
        case 401, 403:
            return .failure(AppStoreAPIError(.configError, reason: "credentials_refused", status: response.status,
                                             detail: "App Store Connect API refused our credentials (HTTP \(response.status)): check APPSTORECONNECT_ISSUER_ID, APPSTORECONNECT_KEY_ID, APPSTORECONNECT_PRIVATE_KEY_FILE and the key's Sales role"))
        case 429, 500...:
            return .failure(AppStoreAPIError(.retry(after: RetryAfter.parse(response.header("Retry-After"))), reason: "http_\(response.status)",
                                             status: response.status, detail: "App Store Connect API answered HTTP \(response.status)"))
        default:
            let codes = AppStoreConnectErrors.codes(in: response.body).joined(separator: ",")
            return .failure(AppStoreAPIError(.rejected, reason: "http_\(response.status)", status: response.status,
                                             detail: "App Store Connect API answered HTTP \(response.status) \(codes)"))
        }
    }

    /// Apple answers a day it has no report for with 404 `NOT_FOUND` ("There were no sales for the date
    /// specified."), whether the day had no sales or is not published yet; developers also see a detail
    /// naming the report as "not available yet". So: a detail that says so, or a time before the day's
    /// report is due (8 a.m. Pacific the next day), means not yet (retried later); after it, no sales.
    public static func missingReport(_ day: ReportDay, details: [String], now: Date) -> SalesReportDownload {
        let saysNotYet = details.contains { $0.lowercased().contains("not available yet") }
        return saysNotYet || now < day.reportDueAt ? .notYetAvailable : .noSales
    }

    private static func url(_ base: URL, query: [URLQueryItem]) -> URL {
        let url = base.appendingPathComponent("v1/salesReports")
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.queryItems = query
        return components.url ?? url
    }
}

/// App Store Connect's error body: `{"errors": [{"status", "code", "title", "detail"}]}`.
enum AppStoreConnectErrors {
    static func codes(in body: [UInt8]) -> [String] { field("code", in: body) }
    static func details(in body: [UInt8]) -> [String] { field("detail", in: body) }

    private static func field(_ name: String, in body: [UInt8]) -> [String] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
              let errors = object["errors"] as? [[String: Any]] else { return [] }
        return errors.compactMap { $0[name] as? String }
    }
}
