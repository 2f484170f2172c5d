-- Requests are admitted in batches: one statement resolves the keys of every
-- request that arrived while the previous statements were in flight and
-- admits them against their accounts' windows (server/keys/admission.ts).
-- A batch may hold several requests of one account; the upsert grants as many
-- as both windows allow, in arrival order, and this column holds that grant,
-- so the statement's RETURNING can tell each request whether it was among
-- them (RETURNING sees only the new row, not the old counts).
alter table usage_counters add column latest_grant integer not null default 0;
