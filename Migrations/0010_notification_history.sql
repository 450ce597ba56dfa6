-- Get Notification History: where the maintenance leader's pulls stand, per environment. A pull
-- covers [pull_start, pull_end) page by page; page_token is the next page to ask for, saved in the
-- same transaction as the page's notifications were enqueued, so a 429, a crash or a new leader
-- resumes from the same page. A finished pull moves pulled_until to its end.
CREATE TABLE iap.notification_history_cursor (
    environment  text PRIMARY KEY CHECK (environment IN ('Production', 'Sandbox')),
    pulled_until timestamptz NULL,   -- end of the last complete pull (NULL: never pulled)
    completed_at timestamptz NULL,   -- when that pull finished
    pull_start   timestamptz NULL,   -- the pull in progress, if any
    pull_end     timestamptz NULL,
    page_token   text NULL,          -- its next page (NULL: its first)
    pages        int NOT NULL DEFAULT 0,
    enqueued     int NOT NULL DEFAULT 0,  -- notifications of the pull in progress that were new jobs
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT notification_history_span CHECK ((pull_start IS NULL) = (pull_end IS NULL))
);
