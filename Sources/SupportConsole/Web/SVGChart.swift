import Foundation

/// Small charts drawn on the server as inline SVG: no script, no external image, and only
/// presentation attributes (the CSP forbids inline `style`).
enum SVGChart {
    static let width = 600.0

    /// Vertical bars, oldest left; `caption` is the accessible name and the hover title.
    /// `axis`: time labels spread evenly under the bars, drawn as HTML so they stay readable when
    /// the chart is squeezed onto a phone (SVG text would shrink with the drawing).
    static func bars(_ values: [Double], height: Double = 110, caption: String, unit: String = "", tone: String = "bar",
                     axis: [String] = []) -> HTML {
        let top = max(values.max() ?? 0, 1)
        let slot = width / Double(max(values.count, 1))
        let bars = values.enumerated().map { index, value -> HTML in
            let h = (value / top * (height - 14)).rounded()
            let x = (Double(index) * slot + 0.5).rounded()
            let w = max(slot - 1, 1)
            return """
                <rect class="\(tone)" x="\(number(x))" y="\(number(height - h))" width="\(number(w))" height="\(number(h))"><title>\(number(value))\(unit)</title></rect>
                """
        }
        return """
            <figure class="chart"><svg viewBox="0 0 \(number(width)) \(number(height))" role="img" aria-label="\(caption)" preserveAspectRatio="none">\
            <line class="axis" x1="0" y1="\(number(height - 0.5))" x2="\(number(width))" y2="\(number(height - 0.5))"></line>\(bars)\
            </svg><div class="axis-labels" aria-hidden="true">\(axis.map { label -> HTML in "<span>\(label)</span>" })</div>\
            <figcaption>\(caption) (UTC; highest \(number(top))\(unit))</figcaption></figure>
            """
    }

    /// Horizontal bars with labels, largest first (outcomes): HTML with a `<meter>` per row, not
    /// SVG text, so the labels keep the page's font size on a phone (SVG text shrinks with the drawing).
    static func labelledBars(_ items: [(label: String, value: Int)], caption: String) -> HTML {
        guard !items.isEmpty else { return "<p class=\"empty\">No finished jobs in this window.</p>" }
        let top = max(items.map(\.value).max() ?? 1, 1)
        let rows = items.map { item -> HTML in
            """
            <li><span class="label">\(Components.badge(item.label))</span>\
            <meter class="\(tone(item.label))" min="0" max="\(top)" value="\(item.value)"></meter><span class="value">\(item.value)</span></li>
            """
        }
        return "<figure class=\"chart\"><ul class=\"hbars\" aria-label=\"\(caption)\">\(rows)</ul><figcaption>\(caption)</figcaption></figure>"
    }

    private static func tone(_ outcome: String) -> String {
        switch outcome {
        case "paid_not_credited", "config_error", "consumption_failed": "bad"
        case "credited", "already_credited", "acknowledged", "restored", "consumption_sent": "ok"
        default: "warn"
        }
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}
