import AppStore
import Foundation

/// A SALES SUMMARY report as Apple writes it: one row per product, product type, country and
/// direction (sales, returns with negative Units), tab-separated under `SalesReportLayout.columns`.
public enum SimSalesReportText {
    public struct Line: Sendable {
        public var productID: String
        public var productType = "IA1"
        public var units: Int
        public var countryCode = "US"
        public init(productID: String, productType: String = "IA1", units: Int, countryCode: String = "US") {
            self.productID = productID
            self.productType = productType
            self.units = units
            self.countryCode = countryCode
        }
    }

    static func render(_ sales: [SimSalesBook.Sale], day: ReportDay) -> String {
        var units: [String: Int] = [:]  // "product\tcountry\t+" → units
        for sale in sales {
            if day.start <= sale.purchaseDate && sale.purchaseDate < day.end {
                units["\(sale.productID)\t\(sale.countryCode)\t+", default: 0] += sale.quantity
            }
            if let refund = sale.refundDate, day.start <= refund && refund < day.end {
                units["\(sale.productID)\t\(sale.countryCode)\t-", default: 0] -= sale.quantity
            }
        }
        let lines = units.sorted { $0.key < $1.key }.map { key, count in
            let parts = key.split(separator: "\t").map(String.init)
            return Line(productID: parts[0], units: count, countryCode: parts[1])
        }
        return text(lines, day: day)
    }

    /// The report text for `lines` on `day` (also what tests build reports with).
    public static func text(_ lines: [Line], day: ReportDay) -> String {
        let date = SalesReportLayout.reportDate(day)
        var out = SalesReportLayout.columns.joined(separator: "\t") + "\n"
        for line in lines {
            let fields = [
                "APPLE", "US", line.productID, "Sim Developer", line.productID, "", line.productType, String(line.units),
                "0.70", date, date, "USD", line.countryCode, "USD", "1000000001", "0.99", "", "com.example.app", "", "", "Games",
                "", "iPhone", "iOS", "", "", "", "",
            ]
            out += fields.joined(separator: "\t") + "\n"
        }
        return out
    }
}
