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

-- One row per (account, environment, UTC day), holding both windows so a
-- request is admitted against the minute and the day limit in one atomic
-- upsert. Every API process sharing the database enforces the same limits,
-- aligned to the database clock. Sandbox and live never share a row.
-- Refused (rate-limited) requests are counted apart and consume neither
-- allowance.
create table usage_counters (
  account_id uuid not null references accounts (id),
  environment text not null check (environment in ('sandbox', 'live')),
  day date not null,
  admitted integer not null,
  refused integer not null default 0,
  minute_start timestamptz not null,
  minute_admitted integer not null,
  primary key (account_id, environment, day)
);
