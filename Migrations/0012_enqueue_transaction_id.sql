-- Enqueue by StoreKit 2 transaction id, for an app that sends only Transaction.id: the worker
-- asks Apple's Get Transaction Info for the signed transaction.
CREATE FUNCTION iap.enqueue_transaction_id(user_id text, order_id text, transaction_id text)
RETURNS bigint LANGUAGE sql AS $$
    SELECT iap.enqueue_job('transaction_id', $1, nullif($2, ''), NULL, $3)
$$;
