import { execFile } from 'node:child_process';
import { chownSync, existsSync, readFileSync } from 'node:fs';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { sqlClient } from '../../server/db/sql.ts';

const run = promisify(execFile);

/** Debian's PostgreSQL 15, which CI installs (.ci/timescaledb.sh) and which the replica tests need for pg_basebackup. */
export const PG_BIN = process.env.MDS_PG_BIN ?? '/usr/lib/postgresql/15/bin';
export const HAVE_PG_BIN = existsSync(path.join(PG_BIN, 'pg_basebackup'));
const TIMESCALEDB = existsSync(path.join(PG_BIN, '..', 'lib', 'timescaledb.so'));

const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL binary, as the postgres user when we are root (initdb and the server refuse root). */
async function pg(binary: string, args: string[]): Promise<void> {
  const file = path.join(PG_BIN, binary);
  await (asRoot ? run('runuser', ['-u', 'postgres', '--', file, ...args]) : run(file, args));
}

/**
 * A primary and a streaming replica made from it with `pg_basebackup -R`, two
 * throw-away clusters that listen on Unix sockets only, in a folder only their
 * owner can enter (no TCP port another local user could reach). TimescaleDB is
 * preloaded when it is installed, so the service migrates the tier CI tests.
 */
export class StreamingPair {
  readonly dir: string;

  private constructor(dir: string) {
    this.dir = dir;
  }

  static async create(): Promise<StreamingPair> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-replica-'));
    if (asRoot) chownSync(dir, ...postgresIds());
    const pair = new StreamingPair(dir);
    try {
      await pg('initdb', ['-D', pair.data('primary'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync', '--no-instructions']);
      await appendFile(pair.conf('primary'), settings(dir, 5432));
      await writeFile(path.join(pair.data('primary'), 'pg_hba.conf'), 'local all all trust\nlocal replication all trust\n');
      await pair.start('primary');
      await pg('pg_basebackup', ['-D', pair.data('replica'), '-R', '-X', 'stream', '--checkpoint=fast', '-h', dir, '-p', '5432', '-U', 'postgres']);
      // The copy carries the primary's settings; the replica's socket gets a port number of its own.
      await appendFile(pair.conf('replica'), 'port = 5433\n');
      await pair.start('replica');
      return pair;
    } catch (err) {
      await pair.destroy();
      throw err;
    }
  }

  get primaryUrl(): string {
    return `postgres://postgres@localhost:5432/postgres?host=${this.dir}`;
  }

  get replicaUrl(): string {
    return `postgres://postgres@localhost:5433/postgres?host=${this.dir}`;
  }

  /** A one-connection client of the replica itself (replay control, checks). */
  replicaClient(): postgres.Sql {
    return sqlClient(this.replicaUrl, { max: 1, onnotice: () => {} });
  }

  async start(which: 'primary' | 'replica'): Promise<void> {
    await pg('pg_ctl', ['-D', this.data(which), '-l', path.join(this.dir, `${which}.log`), '-w', '-t', '60', 'start']);
  }

  /** Stops a cluster at once, as a crash would (no checkpoint, connections cut). */
  async kill(which: 'primary' | 'replica'): Promise<void> {
    await pg('pg_ctl', ['-D', this.data(which), '-m', 'immediate', '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    for (const which of ['replica', 'primary'] as const) {
      if (existsSync(path.join(this.data(which), 'postmaster.pid'))) await this.kill(which).catch(() => {});
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  private data(which: 'primary' | 'replica'): string {
    return path.join(this.dir, which);
  }

  private conf(which: 'primary' | 'replica'): string {
    return path.join(this.data(which), 'postgresql.conf');
  }
}

function settings(dir: string, port: number): string {
  return [
    '',
    "listen_addresses = ''",
    `unix_socket_directories = '${dir}'`,
    `port = ${port}`,
    'max_connections = 100',
    'max_wal_senders = 4',
    'hot_standby = on',
    "timezone = 'UTC'",
    'fsync = off',
    'full_page_writes = off',
    ...(TIMESCALEDB ? ["shared_preload_libraries = 'timescaledb'", 'timescaledb.telemetry_level = off'] : []),
    '',
  ].join('\n');
}

function postgresIds(): [number, number] {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no postgres user to run the clusters as');
  const [, , uid, gid] = line.split(':');
  return [Number(uid), Number(gid)];
}
