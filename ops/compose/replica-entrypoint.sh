#!/usr/bin/env bash
# Entrypoint of the compose replica (`db-replica` in docker-compose.yml): on an
# empty data volume it copies the primary with pg_basebackup -R, then hands
# over to the image's own entrypoint, which finds a data directory and starts
# PostgreSQL on it as a hot standby streaming from the primary.
#
# Runs as root, the image's default user, like the image's entrypoint; the
# copy is made as postgres, the owner of PGDATA. Environment (docker-compose.yml):
#   PGDATA                 the image's data directory, /var/lib/postgresql/data
#   PRIMARY_HOST           the primary service's name, `db`
#   REPLICATION_PASSWORD   the password ops/compose/primary-replication.sh gave
#                          the role `replicator` on the primary
set -Eeuo pipefail

: "${PGDATA:?}" "${PRIMARY_HOST:?}" "${REPLICATION_PASSWORD:?}"

# Written after pg_basebackup has finished: a data directory without it is a
# copy cut short (the container stopped mid-copy), begun again from scratch.
# PostgreSQL ignores files it does not know in its data directory.
COMPLETE="$PGDATA/mds-base-backup-complete"

# The postgres image steps down with gosu; its older Alpine builds with
# su-exec, which the newer ones keep as a link to gosu.
as_postgres() {
  if command -v gosu >/dev/null; then gosu postgres "$@"; else su-exec postgres "$@"; fi
}

if [ ! -e "$COMPLETE" ]; then
  mkdir -p "$PGDATA"
  find "$PGDATA" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +
  chown postgres:postgres "$PGDATA"
  chmod 0700 "$PGDATA"
  until pg_isready --quiet --host="$PRIMARY_HOST" --port=5432; do
    echo "replica: waiting for the primary at $PRIMARY_HOST:5432" >&2
    sleep 2
  done
  echo "replica: copying the primary at $PRIMARY_HOST:5432 into $PGDATA" >&2
  # --write-recovery-conf (-R): standby.signal, and primary_conninfo (with this
  # password) in postgresql.auto.conf, so the server starts as a standby of
  # PRIMARY_HOST. --wal-method=stream: the WAL written during the copy comes
  # with it. --checkpoint=fast: the copy starts without waiting for the
  # primary's next scheduled checkpoint. On failure pg_basebackup removes what
  # it wrote, and the container's restart policy tries again.
  PGPASSWORD="$REPLICATION_PASSWORD" as_postgres pg_basebackup \
    --host="$PRIMARY_HOST" --port=5432 --username=replicator \
    --pgdata="$PGDATA" --write-recovery-conf --wal-method=stream --checkpoint=fast
  as_postgres touch "$COMPLETE"
fi

exec docker-entrypoint.sh "$@"
