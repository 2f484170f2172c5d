-- The account dashboard (/account on the public listener): one sign-in per
-- account, its server-side sessions, the sign-in attempt windows, and the
-- link from a rolled key to the key it replaces.

-- `login` is kept lower-case, so sign-in ignores case. `password_hash` is
-- null until the password is set (by the operator, or by accepting an
-- invitation); it is a self-describing scrypt string (server/dashboard/password.ts).
-- An invitation is stored only as the SHA-256 of its token.
create table dashboard_logins (
  account_id uuid primary key references accounts (id),
  login text not null unique check (login = lower(login) and length(login) between 1 and 200),
  password_hash text,
  invitation_hash bytea unique,
  invitation_expires_at timestamptz,
  updated_at timestamptz not null default now(),
  check ((invitation_hash is null) = (invitation_expires_at is null))
);

-- A session is stored only as the SHA-256 of the id in its cookie. It ends at
-- whichever comes first: DASHBOARD_SESSION_IDLE_MINUTES after `last_seen_at`,
-- DASHBOARD_SESSION_MAX_HOURS after `created_at`, or sign-out (row deleted).
create table dashboard_sessions (
  id_hash bytea primary key,
  account_id uuid not null references accounts (id),
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now()
);

create index dashboard_sessions_account_idx on dashboard_sessions (account_id);

-- Sign-in attempts per fixed window, one row per subject ('login:<login>' or
-- 'address:<ip>'), counted in one upsert so every process shares the limits.
create table dashboard_sign_in_attempts (
  subject text primary key,
  window_start timestamptz not null,
  attempts integer not null
);

create index dashboard_sign_in_attempts_window_idx on dashboard_sign_in_attempts (window_start);

-- A key made by rolling another names it, so the dashboard can show both
-- keys' lastUsedAt side by side until the old one is revoked.
alter table api_keys add column rolled_from uuid references api_keys (id);
