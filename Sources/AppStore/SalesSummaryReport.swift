/// A parsed daily Sales and Trends summary report (see `SalesReportLayout`).
public struct SalesSummaryReport: Sendable, Equatable {
    public struct Row: Sendable, Equatable {
        public var sku: String
        public var productType: String
        /// Negative for returns (refunds), which Apple reports as their own rows.
        public var units: Int
        public var beginDate: String
        public var endDate: String
        public var countryCode: String
        public var isInApp: Bool { SalesReportLayout.inAppProductTypes.contains(productType) }
    }

    /// One in-app product's day, summed over countries, prices and devices.
    public struct ProductUnits: Sendable, Equatable {
        public var productID: String
        public var units: Int
        public var returns: Int

        public init(productID: String, units: Int, returns: Int) {
            self.productID = productID
            self.units = units
            self.returns = returns
        }
    }

    public var rows: [Row]

    /// A day with no sales: Apple publishes no report for it.
    public static let empty = SalesSummaryReport(rows: [])

    /// Parses the report's text. `day`, when given, must be the report's only Begin and End Date.
    public static func parse(_ text: String, day: ReportDay? = nil) throws(SalesReportParseError) -> SalesSummaryReport {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }  // the final newline
        guard let header = lines.first else { throw SalesReportParseError(line: 1, "empty report") }
        let names = header.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard names == SalesReportLayout.columns else {
            throw SalesReportParseError(line: 1, "header is not the SALES SUMMARY 1_0 layout (got \(names.count) columns: \(names.prefix(3).joined(separator: ", "))...)")
        }
        let expectedDate = day.map(SalesReportLayout.reportDate)
        var rows: [Row] = []
        rows.reserveCapacity(lines.count - 1)
        for (offset, line) in lines.dropFirst().enumerated() {
            rows.append(try row(line, number: offset + 2, expectedDate: expectedDate))
        }
        return SalesSummaryReport(rows: rows)
    }

    private static func row(_ line: Substring, number: Int, expectedDate: String?) throws(SalesReportParseError) -> Row {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == SalesReportLayout.columns.count else {
            throw SalesReportParseError(line: number, "\(fields.count) fields, the layout has \(SalesReportLayout.columns.count)")
        }
        let unitsText = fields[SalesReportLayout.units]
        guard let units = wholeUnits(unitsText), units != 0 else {
            throw SalesReportParseError(line: number, "Units '\(unitsText)' is not a non-zero whole number")
        }
        let sku = String(fields[SalesReportLayout.sku]), type = String(fields[SalesReportLayout.productType])
        guard !sku.isEmpty, !type.isEmpty else { throw SalesReportParseError(line: number, "SKU and Product Type Identifier are required") }
        let begin = String(fields[SalesReportLayout.beginDate]), end = String(fields[SalesReportLayout.endDate])
        guard isReportDate(begin), isReportDate(end) else { throw SalesReportParseError(line: number, "dates are not MM/DD/YYYY") }
        if let expectedDate, begin != expectedDate || end != expectedDate {
            throw SalesReportParseError(line: number, "row is for \(begin)-\(end), not the report's day \(expectedDate)")
        }
        return Row(sku: sku, productType: type, units: units, beginDate: begin, endDate: end,
                   countryCode: String(fields[SalesReportLayout.countryCode]))
    }

    /// Units are whole numbers; Apple's field reference types the column DECIMAL(18,2), so "3.00" reads as 3.
    static func wholeUnits(_ text: Substring) -> Int? {
        if let units = Int(text) { return units }
        guard let dot = text.firstIndex(of: "."), text[text.index(after: dot)...].allSatisfy({ $0 == "0" }) else { return nil }
        return Int(text[..<dot])
    }

    private static func isReportDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 10 && bytes[2] == UInt8(ascii: "/") && bytes[5] == UInt8(ascii: "/")
            && [0, 1, 3, 4, 6, 7, 8, 9].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[$0]) }
    }

    /// In-app rows only (their product type identifiers), summed per product; returns counted as positive
    /// units. Sorted by product. The product is the SKU column: "For in-app purchases, the field will populate
    /// the Product ID as set in App Store Connect" (App Store Connect Help, "Summary Sales Report",
    /// https://developer.apple.com/help/app-store-connect/reference/summary-sales-report). Not Apple Identifier
    /// (Apple's numeric id) nor Parent Identifier (the SKU of the app the purchase belongs to).
    public var inAppUnits: [ProductUnits] {
        var byProduct: [String: ProductUnits] = [:]
        for row in rows where row.isInApp {
            var entry = byProduct[row.sku] ?? ProductUnits(productID: row.sku, units: 0, returns: 0)
            if row.units > 0 { entry.units += row.units } else { entry.returns -= row.units }
            byProduct[row.sku] = entry
        }
        return byProduct.values.sorted { $0.productID < $1.productID }
    }
}
