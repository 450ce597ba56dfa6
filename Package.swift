// swift-tools-version:6.0
import PackageDescription

// No third-party packages: the toolchain plus system C libraries (libpq, OpenSSL).
let package = Package(
    name: "receipt-worker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "receipt-worker", targets: ["ReceiptWorkerCLI"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // gzip for App Store Connect's sales reports (OpenSSL has no inflate).
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        // Only what Swift cannot import from OpenSSL's headers (macros, variadics).
        .target(name: "CCryptoShim", dependencies: ["COpenSSL"]),
        // A leaf: UTC calendar fields and the timestamp texts of logs, PostgreSQL and Apple.
        .target(name: "UTCTime"),
        // A leaf: a strict byte-level JSON reader and writer for the hot paths, and the one JSON string escaper.
        .target(name: "JSONWire"),
        // Database access: libpq connections on their own threads, typed rows, COPY, LISTEN/NOTIFY.
        .target(name: "Postgres", dependencies: ["CLibPQ", "UTCTime", "JSONWire"]),
        // A private throw-away cluster from the system initdb/pg_ctl (demo, tests, benchmarks).
        .target(name: "EmbeddedPostgres"),
        // Leaves: logging and metrics; a small HTTP/1.1 server and client transport (TLS on OpenSSL).
        .target(name: "Observability", dependencies: ["UTCTime", "JSONWire"]),
        .target(name: "HTTP", dependencies: ["CLinuxShim", "COpenSSL", "CCryptoShim"]),
        // epoll, eventfd, accept4: what Swift's Glibc module does not import.
        .target(name: "CLinuxShim"),
        // The generic job engine: claim, complete, retry, leases, maintenance, shutdown.
        .target(name: "Queue", dependencies: ["Postgres", "Observability", "JSONWire"]),
        // X.509 chains, ES256 keys and signatures, compact JWS: general crypto on OpenSSL, nothing of Apple's.
        .target(name: "StoreKitCrypto", dependencies: ["COpenSSL", "CCryptoShim"]),
        // Apple: wire formats, status codes, verifyReceipt client.
        .target(name: "AppStore", dependencies: ["HTTP", "StoreKitCrypto", "COpenSSL", "CCryptoShim", "CZlib", "UTCTime", "JSONWire"]),
        // The money: matching, crediting, alerts.
        .target(name: "Settlement", dependencies: ["Postgres", "Queue", "AppStore", "StoreKitCrypto", "Observability", "HTTP", "JSONWire"]),
        // Apple's books against the ledger: the daily sales summary, per product, and the buyers behind a gap.
        .target(name: "Reconciliation", dependencies: ["Postgres", "Queue", "AppStore", "StoreKitCrypto", "Settlement", "Observability", "JSONWire"]),
        // Faces.
        .target(name: "Ingest", dependencies: ["Postgres", "HTTP", "Observability", "JSONWire"]),
        .target(name: "AppleSim", dependencies: ["AppStore", "StoreKitCrypto", "HTTP", "Observability", "COpenSSL", "JSONWire"]),
        // The support console: a server-rendered web application (SPEC 10).
        .target(name: "SupportConsole", dependencies: ["Postgres", "HTTP", "Observability", "Queue", "AppStore", "Settlement", "COpenSSL"]),
        // Workloads the CLI runs but does not hold: the benchmarks and the demo's tour.
        .target(name: "Workloads", dependencies: ["Postgres", "EmbeddedPostgres", "Observability", "HTTP", "Queue",
                                                  "AppStore", "Settlement", "Reconciliation", "Ingest", "AppleSim", "SupportConsole"]),
        .executableTarget(
            name: "ReceiptWorkerCLI",
            dependencies: ["Postgres", "EmbeddedPostgres", "Observability", "HTTP", "Queue",
                           "AppStore", "StoreKitCrypto", "Settlement", "Reconciliation", "Ingest", "AppleSim", "Workloads", "SupportConsole", "CLinuxShim"]
        ),
        .target(name: "TestSupport", dependencies: ["Postgres", "EmbeddedPostgres"], path: "Tests/TestSupport"),
        .testTarget(name: "UTCTimeTests", dependencies: ["UTCTime"]),
        .testTarget(name: "JSONWireTests", dependencies: ["JSONWire"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability", "TestSupport"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "AppleSim"]),
        .testTarget(name: "QueueTests", dependencies: ["Queue", "TestSupport", "EmbeddedPostgres"]),
        .testTarget(name: "AppStoreTests", dependencies: ["AppStore", "StoreKitCrypto", "AppleSim", "HTTP", "JSONWire"]),
        .testTarget(name: "SettlementTests", dependencies: ["Settlement", "EmbeddedPostgres", "Reconciliation", "AppleSim", "AppStore", "StoreKitCrypto", "Queue", "TestSupport", "Observability", "Ingest", "HTTP"]),
        .testTarget(name: "IngestTests", dependencies: ["Ingest", "TestSupport", "HTTP", "Observability"]),
        .testTarget(name: "SupportConsoleTests", dependencies: ["SupportConsole", "TestSupport", "EmbeddedPostgres", "HTTP", "Observability", "Postgres",
                                                                "Settlement", "Queue", "Ingest"]),
        // The container image, the compose stack, the Kubernetes manifests and the systemd units,
        // through scripts/container-stack.sh and scripts/check-manifests.sh.
        .testTarget(name: "DeploymentTests", dependencies: ["TestSupport"]),
        .testTarget(name: "EndToEndTests", dependencies: ["ReceiptWorkerCLI", "TestSupport", "EmbeddedPostgres", "Workloads", "AppleSim", "AppStore", "Postgres", "HTTP"]),
    ],
    swiftLanguageModes: [.v6]
)
