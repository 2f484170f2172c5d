#!/usr/bin/env bash
# TimescaleDB for PostgreSQL 15 on Debian bookworm, for CI and for local
# development, in either edition (MDS_TSDB_EDITION):
#
#   apache (default)  the Apache-2 edition, built from Debian trixie's source
#                     (hypertables; Debian strips the TSL code)
#   full              the full edition production runs (continuous aggregates,
#                     compression, policies), built from the unmodified upstream
#                     source in ../shared/vendor/ (never copied into this
#                     repository: its licence allows unmodified standalone copies only)
#
# Installing one edition replaces the other's extension control file, so a
# cluster started afterwards creates the extension in the installed edition.
#
#   bash .ci/timescaledb.sh install        build (or take from cache) and install the extension
#   bash .ci/timescaledb.sh start [port]   fresh throw-away cluster + database mds_test;
#                                          the last line of stdout is its URL
#   bash .ci/timescaledb.sh stop [port]    stop that cluster
#   bash .ci/timescaledb.sh status [port]  print the URL if the cluster is running (exit 1 if not)
#   bash .ci/timescaledb.sh check [port]   smoke test: create extension, license, hypertable
#
# Default port: 55432. The cluster lives in /tmp/mds-ci-pg-<port> (MDS_PG_DIR overrides).
#
# Why build from source: Debian bookworm has no TimescaleDB binary for PG15, and
# the only network we can count on is Debian's archive (and npm). Debian trixie
# carries TimescaleDB's source (Apache edition only, the TSL code is stripped),
# which builds cleanly against bookworm's postgresql-server-dev-15.
#
# The trixie source index is fetched into a private apt directory, so the
# system's apt lists never see trixie. Build dependencies come from bookworm
# with --no-upgrade and postgresql-server-dev-15 pinned to the installed server
# version, so installing them never upgrades the PostgreSQL packages.
#
# The built artefacts (.so files, .control and .sql scripts) are cached in
# ~/.cache/mds-timescaledb/<timescaledb-version>/pg<major>/ (MDS_TSDB_CACHE_DIR
# overrides the root). With a cache entry present, `install` needs no network:
# it just copies the files into PostgreSQL's lib and extension directories.
#
# Environment knobs:
#   MDS_TSDB_EDITION    apache (default) or full
#   MDS_TSDB_FULL_SOURCE  the full edition's source archive (default:
#                       ../shared/vendor/timescaledb-$FULL_VERSION.tar.gz beside
#                       the repository); its version and sha256 must be the ones
#                       pinned below, which docker-compose.yml's image follows
#   PG_MAJOR            PostgreSQL major version (default 15)
#   MDS_TSDB_VERSION    use/require this TimescaleDB version (default: newest
#                       cached one, else whatever trixie currently ships)
#   MDS_TSDB_REBUILD=1  ignore the cache and rebuild from source
#   MDS_TSDB_SUITE      Debian suite to take the source from (default trixie)
#   DEBIAN_MIRROR       default http://deb.debian.org/debian
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
PGBIN="/usr/lib/postgresql/${PG_MAJOR}/bin"
PG_LIBDIR="/usr/lib/postgresql/${PG_MAJOR}/lib"
PG_EXTDIR="/usr/share/postgresql/${PG_MAJOR}/extension"
CACHE_ROOT="${MDS_TSDB_CACHE_DIR:-${HOME:-/root}/.cache/mds-timescaledb}"
SUITE="${MDS_TSDB_SUITE:-trixie}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DEFAULT_PORT=55432
DB_NAME=mds_test
EDITION="${MDS_TSDB_EDITION:-apache}"
case "$EDITION" in apache | full) ;; *) echo "[timescaledb.sh] ERROR: MDS_TSDB_EDITION must be apache or full, not $EDITION" >&2; exit 1 ;; esac
# The full edition's source: TimescaleDB 2.28.3, the last release for
# PostgreSQL 15, as `git archive` of the upstream tag (../shared/vendor/README.md).
FULL_SOURCE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/vendor"
FULL_VERSION=2.28.3
FULL_SOURCE_SHA256=ec2f7de0ba53a473c01e0a57e09053898c6b1f7487228caff0f1d31c8cb2dedb

log() { printf '[timescaledb.sh] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# Run a command with root privileges (we are root in CI; developers may have sudo).
as_root() {
  if is_root; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

# PostgreSQL refuses to run as root: use the postgres system user then.
as_pg() {
  if is_root; then (cd / && runuser -u postgres -- "$@")
  else "$@"
  fi
}

APT_UPDATED=0
apt_update_once() {
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update (system lists)"
    as_root apt-get update -q >&2
    APT_UPDATED=1
  fi
}

apt_install() {
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Use-Pty=0 \
    --no-upgrade --no-install-recommends "$@" >&2
}

pkg_installed() {
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]
}

ensure_pg_server() {
  if [ -x "$PGBIN/postgres" ] && [ -x "$PGBIN/initdb" ] && [ -x "$PGBIN/pg_ctl" ]; then
    return 0
  fi
  log "PostgreSQL ${PG_MAJOR} server not found in $PGBIN: installing postgresql-${PG_MAJOR}"
  apt_update_once
  apt_install "postgresql-${PG_MAJOR}" "postgresql-client-${PG_MAJOR}"
  [ -x "$PGBIN/postgres" ] || die "postgresql-${PG_MAJOR} installed but $PGBIN/postgres is missing"
}

ensure_build_deps() {
  local server_ver want=() p
  server_ver="$(dpkg-query -W -f='${Version}' "postgresql-${PG_MAJOR}")"
  for p in cmake make gcc libc6-dev libssl-dev dpkg-dev xz-utils; do
    pkg_installed "$p" || want+=("$p")
  done
  if ! pkg_installed "postgresql-server-dev-${PG_MAJOR}"; then
    apt_update_once
    # Same version as the server when the archive still has it; otherwise the
    # candidate (the server ABI is stable across minor releases).
    if apt-cache madison "postgresql-server-dev-${PG_MAJOR}" | awk -F'|' '{gsub(/ /,"",$2); print $2}' \
        | grep -qxF "$server_ver"; then
      want+=("postgresql-server-dev-${PG_MAJOR}=${server_ver}")
    else
      want+=("postgresql-server-dev-${PG_MAJOR}")
    fi
  fi
  if [ "${#want[@]}" -gt 0 ]; then
    apt_update_once
    log "installing build dependencies: ${want[*]}"
    apt_install "${want[@]}"
  fi
  # Belt and braces: the server must not have moved under us.
  [ "$(dpkg-query -W -f='${Version}' "postgresql-${PG_MAJOR}")" = "$server_ver" ] \
    || die "postgresql-${PG_MAJOR} changed version while installing build dependencies"
}

# A cache entry is named by the TimescaleDB version, with -full for the full edition.
entry_name() { if [ "$EDITION" = full ]; then echo "$1-full"; else echo "$1"; fi; }

# Newest complete cache entry of this edition for this PG major (its version), or empty.
cached_version() {
  local d name
  [ -d "$CACHE_ROOT" ] || { echo ""; return; }
  for d in "$CACHE_ROOT"/*/pg"$PG_MAJOR"/BUILDINFO; do
    [ -f "$d" ] || continue
    name="$(basename "$(dirname "$(dirname "$d")")")"
    case "$EDITION:$name" in
      full:*-full) echo "${name%-full}" ;;
      apache:*-full | full:*) ;;
      *) echo "$name" ;;
    esac
  done | sort -V | tail -n1
}

cache_dir_for() { echo "$CACHE_ROOT/$(entry_name "$1")/pg$PG_MAJOR"; }

# Builds the TimescaleDB source in <dir> (version <upver>, scratch space
# <work>) with CMake, stages the install and assembles its files as this
# edition's cache entry, renamed into place at once; <source-line> goes into
# BUILDINFO, and any further arguments are CMake flags of the edition.
build_source_into_cache() {
  local work="$1" dir="$2" upver="$3" source_line="$4" jobs stage dest tmpdest
  shift 4
  local flags=(-DCMAKE_BUILD_TYPE=Release -DREGRESS_CHECKS=OFF -DTAP_CHECKS=OFF -DLINTER=OFF -DUSE_TELEMETRY=OFF -DSEND_TELEMETRY_DEFAULT=OFF -DWARNINGS_AS_ERRORS=OFF "$@")
  jobs="$(nproc 2>/dev/null || echo 2)"
  log "building TimescaleDB $upver ($EDITION edition) against PostgreSQL $PG_MAJOR with $jobs jobs"
  cmake -S "$dir" -B "$dir/build" -DPG_CONFIG="$PGBIN/pg_config" "${flags[@]}" \
    > "$work/cmake.log" 2>&1 || { tail -n 50 "$work/cmake.log" >&2; die "cmake configure failed"; }
  cmake --build "$dir/build" -j "$jobs" > "$work/build.log" 2>&1 \
    || { tail -n 80 "$work/build.log" >&2; die "build failed"; }
  stage="$work/stage"
  DESTDIR="$stage" cmake --install "$dir/build" > "$work/install.log" 2>&1 \
    || { tail -n 30 "$work/install.log" >&2; die "staged install failed"; }

  # Assemble the cache entry next to its final place, then rename it in atomically.
  dest="$(cache_dir_for "$upver")"
  mkdir -p "$(dirname "$dest")"
  tmpdest="$(mktemp -d "$(dirname "$dest")/.tmp.XXXXXX")"
  mkdir -p "$tmpdest/lib" "$tmpdest/extension"
  cp -p "$stage$PG_LIBDIR"/timescaledb*.so "$tmpdest/lib/"
  cp -p "$stage$PG_EXTDIR"/timescaledb* "$tmpdest/extension/"
  [ -f "$tmpdest/lib/timescaledb-$upver.so" ] || die "build did not produce timescaledb-$upver.so"
  if [ "$EDITION" = full ]; then
    [ -f "$tmpdest/lib/timescaledb-tsl-$upver.so" ] || die "the build did not produce the TSL module timescaledb-tsl-$upver.so"
  else
    [ ! -e "$tmpdest/lib/timescaledb-tsl-$upver.so" ] || die "TSL module built although APACHE_ONLY=ON"
  fi
  {
    echo "timescaledb_version=$upver"
    echo "edition=$EDITION"
    echo "$source_line"
    echo "built_against=postgresql-${PG_MAJOR} $(dpkg-query -W -f='${Version}' "postgresql-${PG_MAJOR}")"
    echo "cmake_flags=${flags[*]}"
    echo "arch=$(dpkg --print-architecture)"
    echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } > "$tmpdest/BUILDINFO"
  rm -rf "$dest"
  mv "$tmpdest" "$dest"
  log "cached in $dest"
}

build_into_cache() {
  local work apt_dir srcver dir upver
  ensure_build_deps

  work="$(mktemp -d /tmp/mds-tsdb-build.XXXXXX)"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" EXIT

  # Private apt state: a deb-src line for $SUITE that the system never sees.
  apt_dir="$work/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
    "$MIRROR" "$SUITE" > "$apt_dir/sources.list"
  local apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
    -o "Acquire::Languages=none"
  )
  is_root && apt_opts+=(-o "APT::Sandbox::User=root")

  log "fetching the $SUITE source index (private apt dir)"
  apt-get "${apt_opts[@]}" update -q >&2
  srcver="$(apt-cache "${apt_opts[@]}" showsrc timescaledb \
    | awk '/^Version:/ {print $2}' | sort -V | tail -n1)"
  [ -n "$srcver" ] || die "no timescaledb source package in $SUITE"
  log "apt-get source timescaledb=$srcver ($SUITE)"
  (cd "$work" && apt-get "${apt_opts[@]}" source -q --only-source "timescaledb=$srcver" >&2)

  dir="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'timescaledb-*' | head -n1)"
  [ -n "$dir" ] || die "apt-get source produced no timescaledb-* directory"
  upver="$(awk -F' *= *' '$1 == "version" {print $2}' "$dir/version.config")"
  [ -n "$upver" ] || die "cannot read the version from $dir/version.config"
  if [ -n "${MDS_TSDB_VERSION:-}" ] && [ "$MDS_TSDB_VERSION" != "$upver" ]; then
    die "MDS_TSDB_VERSION=$MDS_TSDB_VERSION requested but $SUITE ships $upver (and it is not cached)"
  fi

  build_source_into_cache "$work" "$dir" "$upver" "debian_source=timescaledb $srcver ($SUITE)" -DAPACHE_ONLY=ON

  rm -rf "$work"
  trap - EXIT
  BUILT_VERSION="$upver"
}

# The full edition from the vendored upstream archive, checked against its
# pinned sha256, built with the TSL module and cached like the Apache build.
build_full_into_cache() {
  local archive work dir upver sum
  archive="${MDS_TSDB_FULL_SOURCE:-$FULL_SOURCE_DIR/timescaledb-$FULL_VERSION.tar.gz}"
  [ -n "$archive" ] && [ -f "$archive" ] \
    || die "the full edition's source is not at $archive (set MDS_TSDB_FULL_SOURCE)"
  sum="$(sha256sum "$archive" | cut -d' ' -f1)"
  [ "$sum" = "$FULL_SOURCE_SHA256" ] || die "$archive has sha256 $sum, not the pinned $FULL_SOURCE_SHA256"
  ensure_build_deps
  pkg_installed libkrb5-dev || { apt_update_once; apt_install libkrb5-dev; }

  work="$(mktemp -d /tmp/mds-tsdb-build.XXXXXX)"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" EXIT
  tar -xzf "$archive" -C "$work"
  dir="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'timescaledb-*' | head -n1)"
  [ -n "$dir" ] || die "$archive holds no timescaledb-* directory"
  upver="$(awk -F' *= *' '$1 == "version" {print $2}' "$dir/version.config")"
  [ "$upver" = "$FULL_VERSION" ] || die "$archive holds TimescaleDB $upver, not the pinned $FULL_VERSION"

  build_source_into_cache "$work" "$dir" "$upver" "source=$(basename "$archive") sha256 $sum"

  rm -rf "$work"
  trap - EXIT
  BUILT_VERSION="$upver"
}

install_from_cache() {
  local ver="$1" src
  src="$(cache_dir_for "$ver")"
  [ -f "$src/BUILDINFO" ] || die "no cache entry at $src"
  as_root install -d "$PG_LIBDIR" "$PG_EXTDIR"
  as_root install -m 0755 "$src"/lib/*.so "$PG_LIBDIR/"
  as_root install -m 0644 "$src"/extension/* "$PG_EXTDIR/"
  log "installed TimescaleDB $ver ($EDITION edition) into $PG_LIBDIR and $PG_EXTDIR (from $src)"
}

cmd_install() {
  local t0=$SECONDS ver=""
  ensure_pg_server
  if [ -z "${MDS_TSDB_REBUILD:-}" ]; then
    if [ -n "${MDS_TSDB_VERSION:-}" ]; then
      [ -f "$(cache_dir_for "$MDS_TSDB_VERSION")/BUILDINFO" ] && ver="$MDS_TSDB_VERSION"
    else
      ver="$(cached_version)"
    fi
  fi
  if [ -n "$ver" ]; then
    log "cache hit: TimescaleDB $ver ($EDITION edition) for PostgreSQL $PG_MAJOR"
  elif [ "$EDITION" = full ]; then
    log "cache miss: building the full edition from $FULL_SOURCE_DIR"
    BUILT_VERSION=""
    build_full_into_cache
    ver="$BUILT_VERSION"
  else
    log "cache miss: building TimescaleDB from Debian $SUITE's source"
    BUILT_VERSION=""
    build_into_cache
    ver="$BUILT_VERSION"
  fi
  install_from_cache "$ver"
  log "install done in $((SECONDS - t0))s"
  echo "$ver"
}

# ---------------------------------------------------------------- cluster --

port_arg() {
  local p="${1:-$DEFAULT_PORT}"
  [[ "$p" =~ ^[0-9]+$ ]] && [ "$p" -ge 1024 ] && [ "$p" -le 65535 ] || die "bad port: $p"
  echo "$p"
}
cluster_dir() { echo "${MDS_PG_DIR:-/tmp/mds-ci-pg-$1}"; }
url_for() { echo "postgres://postgres@127.0.0.1:$1/$DB_NAME"; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cluster_running() {
  local data="$1/data"
  [ -f "$data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1
}

cmd_stop() {
  local port dir
  port="$(port_arg "${1:-}")"
  dir="$(cluster_dir "$port")"
  if cluster_running "$dir"; then
    log "stopping the cluster in $dir (port $port)"
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >&2 \
      || as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >&2
  else
    log "no cluster running in $dir"
  fi
}

cmd_start() {
  local port dir data t0=$SECONDS
  port="$(port_arg "${1:-}")"
  dir="$(cluster_dir "$port")"
  data="$dir/data"
  ensure_pg_server
  [ -f "$PG_LIBDIR/timescaledb.so" ] && [ -f "$PG_EXTDIR/timescaledb.control" ] \
    || die "TimescaleDB is not installed for PostgreSQL $PG_MAJOR: run 'bash .ci/timescaledb.sh install' first"

  cmd_stop "$port"
  if port_busy "$port"; then
    die "port $port is in use by something other than the cluster in $dir"
  fi

  rm -rf "$dir"
  mkdir -p "$dir"
  is_root && chown postgres:postgres "$dir"
  chmod 0700 "$dir"

  as_pg "$PGBIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
    --no-sync --no-instructions >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; die "initdb failed"; }

  # Throw-away test cluster: durability off, TimescaleDB preloaded, telemetry off.
  as_pg tee -a "$data/postgresql.conf" >/dev/null <<EOF

# ---- added by .ci/timescaledb.sh ----
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
shared_preload_libraries = 'timescaledb'
timescaledb.telemetry_level = off
timescaledb.max_background_workers = 8
max_worker_processes = 16
timezone = 'UTC'
log_timezone = 'UTC'
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  # initdb -A trust already trusts every local and host line; be explicit anyway.
  as_pg tee "$data/pg_hba.conf" >/dev/null <<EOF
local all all              trust
host  all all 127.0.0.1/32 trust
host  all all ::1/128      trust
EOF

  as_pg "$PGBIN/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null 2>&1 \
    || { tail -n 40 "$dir/server.log" >&2 || true; die "the server did not start (log: $dir/server.log)"; }
  "$PGBIN/createdb" -h 127.0.0.1 -p "$port" -U postgres "$DB_NAME" \
    || die "createdb $DB_NAME failed"
  log "cluster up in $((SECONDS - t0))s: data $data, log $dir/server.log"
  url_for "$port"
}

cmd_status() {
  local port dir
  port="$(port_arg "${1:-}")"
  dir="$(cluster_dir "$port")"
  if cluster_running "$dir"; then url_for "$port"; else log "not running ($dir)"; return 1; fi
}

# Smoke test in a scratch database, so mds_test stays untouched.
cmd_check() {
  local port psql license
  port="$(port_arg "${1:-}")"
  psql=(env PGOPTIONS='-c client_min_messages=warning' "$PGBIN/psql" -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres)
  "${psql[@]}" -q -d postgres -c 'drop database if exists mds_tsdb_check' -c 'create database mds_tsdb_check' >&2
  "${psql[@]}" -d mds_tsdb_check -At -F ' ' >&2 <<'SQL'
create extension timescaledb;
select 'timescaledb', extversion, current_setting('timescaledb.license') as license
  from pg_extension where extname = 'timescaledb';
create table check_bars (ts timestamptz not null, v double precision);
select 'hypertable', (create_hypertable('check_bars', by_range('ts'))).created;
insert into check_bars select g, 1 from generate_series(now() - interval '30 days', now(), interval '1 hour') g;
select 'chunks', count(*) from show_chunks('check_bars');
select 'time_bucket rows', count(*) from (select time_bucket('1 day', ts) from check_bars group by 1) b;
SQL
  # The edition installed is the one the cluster runs.
  license="$("${psql[@]}" -d mds_tsdb_check -At -c "select current_setting('timescaledb.license')")"
  "${psql[@]}" -q -d postgres -c 'drop database mds_tsdb_check' >&2
  [ "$license" = "$([ "$EDITION" = full ] && echo timescale || echo apache)" ] \
    || die "the cluster on port $port runs timescaledb.license=$license, not the $EDITION edition"
  log "check passed on port $port ($EDITION edition, license $license)"
}

main() {
  local cmd="${1:-}"
  [ $# -gt 0 ] && shift
  case "$cmd" in
    install) cmd_install "$@" ;;
    start)   cmd_start "$@" ;;
    stop)    cmd_stop "$@" ;;
    status)  cmd_status "$@" ;;
    check)   cmd_check "$@" ;;
    *) sed -n '2,22p' "$0" >&2; exit 2 ;;
  esac
}

main "$@"
