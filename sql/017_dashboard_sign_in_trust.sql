-- Dashboard sign-in limits that an attacker cannot turn against a holder
-- (docs/dashboard.md#sign-in-limits).

-- One row per subject: 'address:<ip>', 'login-address:<login> <ip>',
-- 'login:<login>' (attempts from browsers the login does not recognise),
-- 'device:<sha256 hex>' or 'invitation:<ip>'. A subject's count is forgotten
-- once a window passes without an attempt it admitted. The rows are transient,
-- so the table is made anew.
drop table dashboard_sign_in_attempts;

create table dashboard_sign_in_attempts (
  subject text primary key,
  attempts integer not null,
  last_attempt_at timestamptz not null
);

create index dashboard_sign_in_attempts_last_idx on dashboard_sign_in_attempts (last_attempt_at);

-- A browser that signed in to a login: the SHA-256 of the secret in its
-- mds_device cookie. Its sign-ins to that login are counted on their own,
-- so guesses from elsewhere do not slow them down.
create table dashboard_devices (
  token_hash bytea primary key,
  account_id uuid not null references accounts (id),
  login text not null,
  expires_at timestamptz not null
);

create index dashboard_devices_account_idx on dashboard_devices (account_id);
