#!/usr/bin/env bash
# The replication role and its pg_hba.conf entry on the compose primary (`db`
# in docker-compose.yml), which db-replica's pg_basebackup connects as.
#
# Mounted into /docker-entrypoint-initdb.d/ of the timescale/timescaledb
# image, whose entrypoint (the postgres image's docker-entrypoint.sh) runs it
# on the first start only, with an empty data volume: after initdb and the
# image's own 000_install_timescaledb.sh and 001_timescaledb_tune.sh (the
# files run in name order), against a temporary server listening on the Unix
# socket only. The entrypoint sources a file that is not executable and runs
# one that is, so this file does neither `exit` nor `set`.

# The password reaches the server as a psql variable, quoted by psql (:'...'),
# never pasted into the SQL text. PostgreSQL 15 stores it as SCRAM-SHA-256.
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname postgres \
  --set replication_password="${REPLICATION_PASSWORD:?REPLICATION_PASSWORD must be set on the db service}" <<'EOSQL'
create role replicator with login replication password :'replication_password';
EOSQL

# The image's entrypoint wrote `host all all all scram-sha-256`, which does not
# match replication connections ("all" never does); pg_hba.conf is read top to
# bottom, so this line, appended after it, is the one they match. The server
# reads it when it starts for real, after this script.
printf '%s\n' '# Streaming replication for db-replica (ops/compose/primary-replication.sh)' \
  'host replication replicator all scram-sha-256' >>"$PGDATA/pg_hba.conf"
