-- Leadership of the maintenance duties is a lease in a table, not a session advisory lock: a
-- lock lives as long as its session, and a session whose network went silent can outlive its
-- process by hours while nobody else may lead. A lease ends by itself at expires_at; it is taken
-- with one statement when absent or expired, renewed by its holder, and works through a
-- transaction-pooling PgBouncer.
CREATE TABLE iap.leader (
    name text PRIMARY KEY,
    leader_id text NOT NULL,
    elected_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
