import AppStore
import Foundation
import Postgres

/// A refund request as the consumption job reads it, with what our ledger says of its transaction.
struct ConsumptionRequestRow: Sendable {
    let transactionID: String
    let environment: AppleEnvironment
    let respondBy: Date
    /// The ledger's buyer, when we credited the transaction.
    let userID: String?
    let credited: Bool
    let revoked: Bool
}

/// What `iap.consumption_info` (the web tier's function) answered.
struct ConsumptionInfo: Sendable {
    let consented: Bool
    let percentage: Int?
    let sampleContentProvided: Bool
}

/// Every SQL statement of refund requests (migration 0011).
struct ConsumptionStore: Sendable {
    /// The request and its job, once per notificationUUID (the notification job already applies each uuid once).
    static let recordSQL = """
        WITH request AS (
            INSERT INTO iap.job_requests (id, kind, user_id, payload, dedup_key)
            VALUES (nextval('iap.jobs_id_seq'), 'consumption', $6, $1, iap.job_dedup_key('consumption', $6, NULL, $1))
            ON CONFLICT (dedup_key) DO NOTHING
            RETURNING id, kind
        ), job AS (
            INSERT INTO iap.job_queue (id, kind) SELECT id, kind FROM request RETURNING id, state, run_at
        ), ready AS (
            INSERT INTO iap.job_ready (id, state, run_at) SELECT id, state, run_at FROM job
        )
        INSERT INTO iap.consumption_requests (notification_uuid, transaction_id, environment, reason, requested_at, respond_by, job_id)
        SELECT $1::uuid, $2, $3, $4, $5::timestamptz, $5::timestamptz + interval '12 hours', (SELECT id FROM job)
        ON CONFLICT (notification_uuid) DO NOTHING
        RETURNING job_id
        """
    static let wakeWorkersSQL = "SELECT pg_notify('iap_jobs', '')"

    /// Records a CONSUMPTION_REQUEST and schedules its `consumption` job; returns the job id (nil if already recorded).
    func record(requestID: UUID, transaction: AppleTransaction, reason: String?, requestedAt: Date, userID: String?,
                on connection: PostgresConnection) async throws -> Int? {
        let rows = try await connection.query(Self.recordSQL, [
            requestID.uuidString.lowercased(), transaction.transactionID, transaction.environment.rawValue, reason, requestedAt, userID,
        ])
        guard let jobID = try rows.first?.decode(Int?.self, at: 0) else { return nil }
        _ = try await connection.query(Self.wakeWorkersSQL)
        return jobID
    }

    static let requestSQL = """
        SELECT r.transaction_id, r.environment, r.respond_by, c.user_id, c.transaction_id IS NOT NULL, c.revoked_at IS NOT NULL
        FROM iap.consumption_requests r LEFT JOIN iap.credits c ON c.transaction_id = r.transaction_id
        WHERE r.notification_uuid = $1::uuid
        """

    func request(_ requestID: String, client: PostgresClient) async throws -> ConsumptionRequestRow? {
        guard UUID(uuidString: requestID) != nil, let row = try await client.query(Self.requestSQL, [requestID]).first else { return nil }
        return ConsumptionRequestRow(
            transactionID: try row.decode(at: 0), environment: AppleEnvironment(rawValue: try row.decode(at: 1)) ?? .production,
            respondBy: try row.decode(at: 2), userID: try row.decode(at: 3), credited: try row.decode(at: 4), revoked: try row.decode(at: 5))
    }

    /// The web tier's answer; a NULL consent, or no row, is no consent.
    static let infoSQL = """
        SELECT coalesce(customer_consented, false), consumption_percentage, coalesce(sample_content_provided, false)
        FROM iap.consumption_info($1, $2) LIMIT 1
        """

    func info(userID: String?, transactionID: String, client: PostgresClient) async throws -> ConsumptionInfo {
        guard let row = try await client.query(Self.infoSQL, [userID, transactionID]).first else {
            return ConsumptionInfo(consented: false, percentage: nil, sampleContentProvided: false)
        }
        return ConsumptionInfo(consented: try row.decode(at: 0), percentage: try row.decode(at: 1), sampleContentProvided: try row.decode(at: 2))
    }

    static let answeredSQL = """
        UPDATE iap.consumption_requests
        SET state = $2, delivery_status = $3, consumption_percentage = $4, refund_preference = $5, detail = $6, answered_at = now()
        WHERE notification_uuid = $1::uuid
        """

    func answered(_ requestID: String, state: String, sent: ConsumptionRequest?, detail: String?,
                  on connection: PostgresConnection) async throws {
        _ = try await connection.query(Self.answeredSQL, [requestID, state, sent?.deliveryStatus.rawValue, sent?.consumptionPercentage,
                                                          sent?.refundPreference?.rawValue, detail])
    }
}
