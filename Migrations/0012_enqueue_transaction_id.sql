-- SPEC 3: the app sent only StoreKit 2's Transaction.id; the worker asks Get Transaction Info (5.6).
CREATE FUNCTION iap.enqueue_transaction_id(user_id text, order_id text, transaction_id text)
RETURNS bigint LANGUAGE sql AS $$
    SELECT iap.enqueue_job('transaction_id', $1, nullif($2, ''), NULL, $3)
$$;
