-- Export jobs (server/exports/, docs/exports.md): a pinned point-in-time read
-- of many instruments, written off the request path into files that live
-- here, in PostgreSQL, so that any serving process on any host can run a job,
-- resume one whose process died, and serve its files.

-- One row per job. A runner takes a job with FOR UPDATE SKIP LOCKED and holds
-- it by its lease (leased_until, renewed by a heartbeat); a job whose lease
-- ran out while it was running is taken again by any runner.
create table export_jobs (
  id uuid primary key,
  account_id uuid not null references accounts (id) on delete cascade,
  status text not null check (status in ('queued', 'running', 'ready', 'failed', 'cancelled', 'expired')),
  -- The request as normalised: asOf pinned, ids sorted, defaults written out.
  request jsonb not null,
  -- instrument id -> the action-set version its bars were adjusted with (the read's meta.actionSetVersions).
  action_set_versions jsonb,
  accepted_at timestamptz not null,
  started_at timestamptz,
  finished_at timestamptz,
  expires_at timestamptz,
  leased_by text,
  leased_until timestamptz,
  attempts integer not null default 0,
  files_total integer,
  files_done integer not null default 0,
  instruments_total integer,
  instruments_done integer not null default 0,
  rows_done bigint not null default 0,
  -- Bytes of the files written so far, counted against EXPORTS_QUOTA_BYTES.
  bytes bigint not null default 0,
  error text
);

-- An account's jobs, newest first (GET /v1/exports and its cursor).
create index export_jobs_account_idx on export_jobs (account_id, accepted_at desc, id desc);
-- The queue: what a runner may take, oldest first.
create index export_jobs_queue_idx on export_jobs (accepted_at, id) where status in ('queued', 'running');
-- The sweep: ready jobs by when their files expire.
create index export_jobs_expiry_idx on export_jobs (expires_at) where status = 'ready';

-- A finished file of a job: written in the same transaction as its last chunk,
-- so a row here means every chunk is stored. head_bytes is the length of chunk
-- 0, which a writer may produce last (an Arrow stream's schema message), so the
-- other chunks start at head_bytes + body_offset.
create table export_files (
  job_id uuid not null references export_jobs (id) on delete cascade,
  name text not null,
  ordinal integer not null,
  rows bigint not null,
  bytes bigint not null,
  head_bytes integer not null,
  sha256 bytea not null check (octet_length(sha256) = 32),
  primary key (job_id, name)
);

-- A file's bytes in chunks of about 1 MiB, so that a Range read fetches only
-- the chunks it covers. Chunks of a file not yet in export_files belong to a
-- file being written, and are deleted when its job restarts.
create table export_chunks (
  job_id uuid not null references export_jobs (id) on delete cascade,
  name text not null,
  seq integer not null,
  body_offset bigint not null,
  data bytea not null,
  primary key (job_id, name, seq)
);
alter table export_chunks alter column data set storage external;

-- The signing key of the files' links (GET /v1/exports/{id}/files/{name}?expires=…&signature=…),
-- made as sql/023 makes the cursor key: 32 random bytes, one per deployment,
-- read from the primary so that every process and host checks links alike.
create table export_link_key (
  singleton boolean primary key default true check (singleton),
  secret bytea not null check (octet_length(secret) = 32),
  created_at timestamptz not null default now()
);

insert into export_link_key (secret)
values (sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())));
