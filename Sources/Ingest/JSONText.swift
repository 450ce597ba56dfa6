import JSONWire

/// Minimal JSON output for the API's small, fixed-shape responses: members keep the documented order.
enum JSONText {
    enum Value {
        case string(String?)
        case int(Int64)
        case strings([String])
    }

    static func object(_ members: KeyValuePairs<String, Value>) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 128)
        writer.beginObject()
        for (key, value) in members {
            writer.key(key)
            switch value {
            case .string(nil): writer.null()
            case .string(let text?): writer.string(text)
            case .int(let number): writer.integer(number)
            case .strings(let items):
                writer.beginArray()
                for item in items { writer.string(item) }
                writer.endArray()
            }
        }
        writer.endObject()
        return writer.bytes
    }
}
