/// Lays bound parameters out in one allocation in the shape PQexecParams wants
/// (values, lengths, formats), and frees it afterwards.
struct ParameterBuffer {
    private let parameters: [PostgresBind]

    init(_ parameters: [PostgresBind]) { self.parameters = parameters }

    func withArrays<T>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws -> T
    ) rethrows -> T {
        if parameters.isEmpty { return try body(nil, nil, nil) }
        // Text values need a NUL terminator; binary values are sized by `lengths`.
        let total = parameters.reduce(0) { $0 + ($1.bytes?.count ?? 0) + 1 }
        let storage = UnsafeMutablePointer<CChar>.allocate(capacity: max(total, 1))
        defer { storage.deallocate() }
        var values: [UnsafePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        var offset = 0
        for parameter in parameters {
            formats.append(parameter.format.rawValue)
            guard let bytes = parameter.bytes else {
                values.append(nil)
                lengths.append(0)
                continue
            }
            let start = storage + offset
            bytes.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(start).copyMemory(from: base, byteCount: bytes.count) }
            }
            start[bytes.count] = 0
            values.append(UnsafePointer(start))
            lengths.append(Int32(bytes.count))
            offset += bytes.count + 1
        }
        return try values.withUnsafeBufferPointer { v in
            try lengths.withUnsafeBufferPointer { l in
                try formats.withUnsafeBufferPointer { f in
                    try body(v.baseAddress, l.baseAddress, f.baseAddress)
                }
            }
        }
    }
}
