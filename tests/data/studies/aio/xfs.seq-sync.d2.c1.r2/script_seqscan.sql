-- A sequential scan of pgbench_accounts: PostgreSQL 18 reads it through a read stream (asynchronous reads with
-- io_method worker or io_uring, combined up to io_combine_limit); bigger than a quarter of shared_buffers, it
-- goes through a small ring of buffers, so every transaction reads the table again from the file system.
SELECT count(*) FROM pgbench_accounts WHERE abalance <> 0;
