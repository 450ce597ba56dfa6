/// Apple's Sales and Trends daily summary report (`SALES`/`SUMMARY`, version 1_0): tab-separated,
/// one header line naming these columns in this order (App Store Connect Help, "Summary Sales Report").
public enum SalesReportLayout {
    public static let columns = [
        "Provider", "Provider Country", "SKU", "Developer", "Title", "Version", "Product Type Identifier", "Units",
        "Developer Proceeds", "Begin Date", "End Date", "Customer Currency", "Country Code", "Currency of Proceeds",
        "Apple Identifier", "Customer Price", "Promo Code", "Parent Identifier", "Subscription", "Period", "Category",
        "CMB", "Device", "Supported Platforms", "Proceeds Reason", "Preserved Pricing", "Client", "Order Type",
    ]

    /// Indices of the columns reconciliation reads.
    static let sku = 2, productType = 6, units = 7, beginDate = 9, endDate = 10, countryCode = 12

    /// Product type identifiers of in-app purchases (App Store Connect Help, "Product type identifiers"):
    /// IA1 in-app purchase, IA9 non-renewing subscription, IAY auto-renewable subscription (iOS, iPadOS,
    /// visionOS), their Mac `-M` twins, and FI1 (Mac). IA3 (a restored purchase) moves no money and is not a sale.
    public static let inAppProductTypes: Set<String> = ["IA1", "IA1-M", "IA9", "IA9-M", "IAY", "IAY-M", "FI1"]

    /// Report dates are MM/DD/YYYY.
    public static func reportDate(_ day: ReportDay) -> String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(day.month))/\(two(day.day))/\(day.year)"
    }
}
