-- A completion's witness names the jobs its transaction did NOT write (their lease had passed to
-- another worker), which is almost always none, instead of every job it wrote: a batch of 1,000
-- ids is an 8 KB array that PostgreSQL would compress and store on every completion.
--
-- A row reads:
--   lost_ids NOT NULL: committed; the batch's jobs except these were written;
--   lost_ids NULL and job_ids NULL: a tombstone (the transaction it stands for can never commit);
--   job_ids NOT NULL: written by a worker built before this migration (the jobs it wrote), read
--   only by that worker, which resolves its own tokens.
-- Adding a nullable column without a default is a catalog change: no rewrite, a brief lock.
ALTER TABLE iap.commit_witness ADD COLUMN IF NOT EXISTS lost_ids bigint[];
COMMENT ON COLUMN iap.commit_witness.lost_ids IS
    'Jobs of the committed batch that were not written (lease lost); NULL with job_ids NULL: a tombstone.';
COMMENT ON COLUMN iap.commit_witness.job_ids IS
    'Written by workers built before migration 0027: the jobs their transaction wrote.';
