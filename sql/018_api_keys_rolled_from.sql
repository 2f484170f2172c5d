-- The admission statement looks up the active keys rolled from a revoked key,
-- so its revoked_api_key error can say whether a replacement exists. Revoked
-- keys are not rate limited, so a client that keeps sending one gets this
-- probe on every request: an index, not a scan of api_keys. Only rolled keys
-- name another, so only they are indexed.
create index api_keys_rolled_from_idx on api_keys (rolled_from) where rolled_from is not null;
