import { parseArgs } from 'node:util';
import { loadConfigOrExit } from '../config.ts';
import { SCOPES } from '../core/scopes.ts';
import type { CommandName, Invocation } from './commands.ts';

const USAGE = `usage: npm run cli -- <command> [options]   (bin: mds)

  accounts create --name <name>
  accounts set-password --account <accountId> --login <login>
                              sets the account's dashboard sign-in; the password is read from the
                              first line of standard input (never an argument), at least 12 characters
  accounts invite --account <accountId> --login <login>
                              prints a dashboard link that sets the password once, within
                              DASHBOARD_INVITATION_HOURS (default 72); the operator never sees the password
  keys create --account <accountId> --env sandbox|live --scopes <scope,scope,...>|all --name <name>
                              --scopes all grants each of the ${SCOPES.length} scopes (stored one by one; there is no wildcard)
  keys list [--account <accountId>]
  keys revoke <keyId>
  keys roll <keyId>           a new key with the same name, environment and scopes; revoke the old one
                              once its lastUsedAt shows traffic has moved
  ingest <kind> <file>        kind: one of the admin upload routes; file: .csv, .ndjson/.jsonl or .json
  demo load                   load the bundled demo data set (idempotent)
  migrate                     apply pending migrations
  status                      storage tier and migrations
  help                        this text (also --help, -h)

scopes: ${SCOPES.join(', ')}

Uses DATABASE_URL, else the embedded PostgreSQL under DATA_DIR (default .data; a relative
DATA_DIR is taken from the project folder, whichever folder the command runs in), joining
it when the service has it running. Only migrate and demo load create the embedded cluster
when there is none; the other commands refuse.`;

/** Each command's positional arguments, and whether it may create the embedded cluster. */
const COMMANDS: Record<CommandName, { args: string[]; createsDatabase?: true }> = {
  'accounts create': { args: [] },
  'accounts set-password': { args: [] },
  'accounts invite': { args: [] },
  'keys create': { args: [] },
  'keys list': { args: [] },
  'keys revoke': { args: ['keyId'] },
  'keys roll': { args: ['keyId'] },
  ingest: { args: ['kind', 'file'] },
  'demo load': { args: [], createsDatabase: true },
  migrate: { args: [], createsDatabase: true },
  status: { args: [] },
};

const isCommand = (name: string): name is CommandName => Object.hasOwn(COMMANDS, name);

/** Usage on stdout and exit 0 when asked for; a wrong invocation's one-line reason and the usage on stderr, exit 2. */
function exitWithUsage(problem?: string): never {
  if (problem === undefined) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  process.stderr.write(`${problem}\n\n${USAGE}\n`);
  process.exit(2);
}

/** The command `argv` names, with its options and arguments; anything else ends the process with the usage. */
function invocation(argv: string[]): Invocation {
  if (argv.length === 0) exitWithUsage('no command given');
  if (argv[0] === 'help' || argv.some((a) => a === '--help' || a === '-h')) exitWithUsage();
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { name: { type: 'string' }, account: { type: 'string' }, env: { type: 'string' }, scopes: { type: 'string' }, login: { type: 'string' } },
    });
  } catch (err) {
    exitWithUsage((err as Error).message);
  }
  const words = parsed.positionals;
  const name = [words.slice(0, 2).join(' '), words[0]].find(isCommand);
  if (!name) exitWithUsage(`unknown command: ${words.join(' ') || argv.join(' ')}`);
  const { args: expected, createsDatabase = false } = COMMANDS[name];
  const args = words.slice(name.split(' ').length);
  if (args.length !== expected.length) {
    exitWithUsage(`${name} takes ${expected.length ? expected.map((a) => `<${a}>`).join(' ') : 'no arguments'}, got ${args.length ? args.join(' ') : 'none'}`);
  }
  return { name, options: parsed.values, args, createsDatabase };
}

// The command line is checked before the commands' modules load: with them,
// `--help` took 1.5 s of CPU here, without them 0.6 s, so help and a mistyped
// command do not wait for modules they never use.
const command = invocation(process.argv.slice(2));
const config = loadConfigOrExit();
const { runCommand } = await import('./commands.ts');
process.exit(await runCommand(config, command));
