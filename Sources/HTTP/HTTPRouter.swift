import Foundation

public typealias HTTPRouteHandler = @Sendable (_ request: HTTPRequest, _ params: [String: String]) async -> HTTPResponse

/// Maps (method, "/v1/jobs/{id}"-style pattern) to handlers. Unknown path → 404, known path with
/// another method → 405 with `Allow`. Responses carry the matched pattern in `route` (404s carry
/// "unmatched") so metrics never get one label per probed URL.
public struct HTTPRouter: Sendable {
    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: HTTPRouteHandler
    }

    private var routes: [Route] = []

    public init() {}

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping HTTPRouteHandler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2
                ? .parameter(String(part.dropFirst().dropLast()))
                : .literal(String(part))
        }
        routes.append(Route(method: method.uppercased(), pattern: pattern, segments: segments, handler: handler))
    }

    /// Every (method, pattern) added, in order: what a published API description is checked against.
    /// A GET route also answers HEAD.
    public var routeTable: [(method: String, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    public mutating func get(_ pattern: String, _ handler: @escaping HTTPRouteHandler) { add("GET", pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping HTTPRouteHandler) { add("POST", pattern, handler) }

    /// The router as a server handler.
    public var handler: HTTPHandler {
        let router = self
        return { request in await router.handle(request) }
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let parts = request.path.split(separator: "/")
        // Candidates for this path; the most literal pattern wins ("/jobs/stats" over "/jobs/{id}").
        var matches: [(route: Route, params: [String: String])] = []
        for route in routes {
            if let params = Self.match(route.segments, parts) { matches.append((route, params)) }
        }
        guard !matches.isEmpty else {
            var response = HTTPResponse.error(status: 404, "not found")
            response.route = "unmatched"
            return response
        }
        func score(_ r: Route) -> Int { r.segments.filter { if case .parameter = $0 { true } else { false } }.count }
        matches.sort { score($0.route) < score($1.route) }
        let method = request.method
        if let hit = matches.first(where: { $0.route.method == method })
            ?? (method == "HEAD" ? matches.first(where: { $0.route.method == "GET" }) : nil) {
            var response = await hit.route.handler(request, hit.params)
            if response.route == nil { response.route = hit.route.pattern }
            return response
        }
        var allowed = Set(matches.map(\.route.method))
        if allowed.contains("GET") { allowed.insert("HEAD") }
        var response = HTTPResponse.error(status: 405, "method not allowed")
        response.headers.append(("Allow", allowed.sorted().joined(separator: ", ")))
        response.route = matches[0].route.pattern
        return response
    }

    private static func match(_ segments: [Segment], _ parts: [Substring]) -> [String: String]? {
        guard segments.count == parts.count else { return nil }
        var params: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal):
                guard part == literal else { return nil }
            case .parameter(let name):
                params[name] = part.removingPercentEncoding ?? String(part)
            }
        }
        return params
    }
}
