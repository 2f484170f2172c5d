-- The signing key of list cursors (server/core/cursor.ts): 32 random bytes,
-- one per deployment. It is made here, in the database, so that every
-- serving process reads the same key from the primary at start and every
-- replica holds it by replication: a cursor made by any process is accepted
-- by all of them, and one made by another deployment by none.
--
-- gen_random_uuid(), built in since PostgreSQL 13, draws from
-- pg_strong_random. A version-4 UUID holds 122 random bits, so the SHA-256 of
-- three (366 bits) is a key of 256 bits as good as random, with no extension.
create table cursor_signing_key (
  singleton boolean primary key default true check (singleton),
  secret bytea not null check (octet_length(secret) = 32),
  created_at timestamptz not null default now()
);

insert into cursor_signing_key (secret)
values (sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())));
