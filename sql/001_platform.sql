-- Accounts, API keys and the usage counters behind quotas and rate limits.
-- Keys are stored only as a SHA-256 hash of the full key plus a short display prefix.

create table accounts (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 200),
  created_at timestamptz not null default now()
);

create table api_keys (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references accounts (id),
  name text not null,
  environment text not null check (environment in ('sandbox', 'live')),
  key_hash bytea not null unique,
  prefix text not null,
  scopes text[] not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);

create index api_keys_account_idx on api_keys (account_id, created_at);

-- One row per (account, environment, window). Both windows are fixed and
-- aligned to the database clock, so every API process sharing the database
-- enforces the same limit. Sandbox and live never share a row.
create table usage_counters (
  account_id uuid not null references accounts (id),
  environment text not null check (environment in ('sandbox', 'live')),
  window_kind text not null check (window_kind in ('minute', 'day')),
  window_start timestamptz not null,
  request_count integer not null,
  primary key (account_id, environment, window_kind, window_start)
);
