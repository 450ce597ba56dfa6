import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTP

/// `https://` through URLSession: one long-lived ephemeral session (no cookies, no cache).
/// Certificate verification is the system default and is never relaxed: no delegate is installed.
public final class URLSessionTransport: HTTPTransport {
    private let session: URLSession

    public init(maxConnectionsPerHost: Int = 64) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: HTTPClientRequest, timeout: Duration) async throws -> HTTPClientResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = max(0.001, timeout.seconds)
        for (name, value) in request.headers { urlRequest.addValue(value, forHTTPHeaderField: name) }
        if !request.body.isEmpty { urlRequest.httpBody = Data(request.body) }
        let session = self.session
        let prepared = urlRequest
        // URLSession's timeout is an inactivity timeout; the race below makes it a hard deadline.
        return try await withThrowingTaskGroup(of: HTTPClientResponse.self) { group in
            group.addTask {
                do {
                    let (data, response) = try await session.data(for: prepared)
                    guard let http = response as? HTTPURLResponse else {
                        throw HTTPClientError.invalidResponse("not an HTTP response")
                    }
                    let headers: HTTPHeaderFields = http.allHeaderFields.compactMap { key, value in
                        guard let name = key as? String else { return nil }
                        return (name, "\(value)")
                    }
                    return HTTPClientResponse(status: http.statusCode, headers: headers, body: [UInt8](data))
                } catch {
                    throw Self.map(error)
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw HTTPClientError.timeout
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw HTTPClientError.cancelled }
            return first
        }
    }

    static func map(_ error: Error) -> HTTPClientError {
        if let error = error as? HTTPClientError { return error }
        if error is CancellationError { return .cancelled }
        guard let urlError = error as? URLError else { return .connectionFailed(String(describing: error)) }
        switch urlError.code {
        case .timedOut: return .timeout
        case .cancelled: return .cancelled
        case .networkConnectionLost: return .connectionReset
        case .badServerResponse, .cannotParseResponse, .cannotDecodeContentData, .cannotDecodeRawData:
            return .invalidResponse(urlError.localizedDescription)
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
             .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
             .clientCertificateRequired:
            return .tlsFailure(urlError.localizedDescription)
        case .badURL, .unsupportedURL:
            return .unsupportedURL(urlError.failingURL?.absoluteString ?? "")
        default:
            return .connectionFailed(urlError.localizedDescription)
        }
    }
}
