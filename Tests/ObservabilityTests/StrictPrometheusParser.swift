import TestSupport
import XCTest

final class StrictPrometheusParserSelfTests: XCTestCase {
    func testRejectsMalformedInput() {
        let bad = [
            "x 1\n",                                                  // no HELP/TYPE
            "# HELP x h\nx 1\n",                                     // HELP without TYPE
            "# HELP x h\n# TYPE x counter\nx{a=\"1\",a=\"2\"} 1\n",   // duplicate label
            "# HELP x h\n# TYPE x counter\nx{1a=\"1\"} 1\n",          // bad label name
            "# HELP x h\n# TYPE x counter\nx  1\n",                 // double space
            "# HELP x h\n# TYPE x counter\nx{a=\"\\\",b=\"1\"} 1\n", // escaped closing quote
            "# HELP x h\n# TYPE x counter\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n", // duplicate series
            "# HELP x h\n# TYPE x counter\nx 1",                      // no final newline
            "# HELP x h\n# TYPE x counter\ny 1\n",                    // wrong name
            "# HELP x h\n# TYPE x counter\nx{a=\"1\" 1\n",            // unclosed labels
            "# HELP x h\n# TYPE x counter\nx{a=\"\\q\"} 1\n",         // bad escape
            "# HELP x h\n# TYPE x counter\nx inf\n",                  // bad value spelling
            "# HELP x h\n# TYPE x summary\nx 1\n",                    // unsupported type
            "# HELP b h\n# TYPE b gauge\n# HELP a h\n# TYPE a gauge\n", // unsorted
            "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
            "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
            "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
        ]
        for text in bad {
            XCTAssertThrowsError(try StrictPrometheusParser.parse(text), text)
        }
    }
}
