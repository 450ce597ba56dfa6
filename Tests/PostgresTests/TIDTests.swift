@testable import Postgres
import TestSupport
import XCTest

/// Row versions (`ctid`) come back as text and go out as binary `tid[]` (`PostgresTIDArray`):
/// the server must read exactly the addresses that went in.
final class TIDTests: XCTestCase {
    func testTheTextFormParsesAndAnythingElseIsRefused() {
        XCTAssertEqual(PostgresTID(postgresText: "(0,1)"), PostgresTID(block: 0, offset: 1))
        XCTAssertEqual(PostgresTID(postgresText: "(4294967295,65535)"), PostgresTID(block: .max, offset: .max))
        XCTAssertEqual(PostgresTID(block: 12, offset: 7).description, "(12,7)")
        for text in ["", "(", "()", "(1)", "(1,)", "(,1)", "(1,2", "1,2)", "(1,2)x", " (1,2)", "(1, 2)", "(a,1)", "(-1,2)",
                     "(1,65536)", "(4294967296,1)", "(99999999999,1)"] {
            XCTAssertNil(PostgresTID(postgresText: text), text)
        }
    }

    func testTheServerReadsEveryAddressAsItWent() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(migrated: false), maxConnections: 1)
        let addresses = [PostgresTID(block: 0, offset: 1), PostgresTID(block: 9091, offset: 23), PostgresTID(block: .max, offset: .max),
                         PostgresTID(block: 65536, offset: 256)]
        let read = try await client.query("SELECT t, n FROM unnest($1::tid[]) WITH ORDINALITY AS u(t, n) ORDER BY n", [addresses])
        XCTAssertEqual(try read.map { try $0.decode(PostgresTID.self, at: 0) }, addresses)
        let empty = try await client.query("SELECT cardinality($1::tid[])", [[PostgresTID]()])
        XCTAssertEqual(try empty[0].decode(Int.self, at: 0), 0)

        // A real row's address, as a claim's RETURNING gives it, finds that row.
        _ = try await client.query("CREATE TABLE rows (id int PRIMARY KEY, note text)")
        _ = try await client.query("INSERT INTO rows SELECT g, 'row ' || g FROM generate_series(1, 300) g")
        let written = try await client.query("UPDATE rows SET note = note || '!' WHERE id IN (7, 250) RETURNING id, ctid")
        let found = try await client.query("SELECT id FROM rows WHERE ctid = ANY($1::tid[]) ORDER BY id",
                                           [try written.map { try $0.decode(PostgresTID.self, at: 1) }])
        XCTAssertEqual(try found.map { try $0.decode(Int.self, at: 0) }, [7, 250])
        await client.close()
    }
}
