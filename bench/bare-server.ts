// The platform-overhead baselines: a bare Express 5 app with one route that
// answers a small JSON body. No auth, no validation, no envelope, no request
// id, no metrics. It uses the service's two app settings that only remove work
// (no X-Powered-By, no ETag), so the comparison isolates the service's own
// middleware and handler. A POST route parses its JSON body, as any Express
// JSON endpoint would.
//
// With BARE_DATABASE_URL the route first makes the one database round trip the
// spec requires of every request, and nothing else: it hashes the bearer key
// and selects the key's row by its hash (one probe of the unique index on
// key_hash, the lookup the service makes for each request) on a pool made by
// the service's createSql with the auth pool's settings; an unknown key gets
// 401. That is the physical limit of a service that must look the key up in
// the store on every request, one request at a time.
//
// Started by startBareServer() in bench/lib/service.ts as a child process, like the
// service, with BARE_PORT, BARE_METHOD, BARE_PATH, BARE_BODY and BARE_DATABASE_URL.
import express, { type RequestHandler } from 'express';
import { ConfigSchema } from '../server/config.ts';
import { createSql } from '../server/db/sql.ts';
import { hashApiKey, parseBearer } from '../server/keys/service.ts';

const port = Number(process.env.BARE_PORT ?? 0);
const method = (process.env.BARE_METHOD ?? 'GET').toUpperCase();
const route = process.env.BARE_PATH ?? '/';
const body: unknown = JSON.parse(process.env.BARE_BODY ?? '{}');
const databaseUrl = process.env.BARE_DATABASE_URL;

const sql = databaseUrl
  ? createSql(databaseUrl, {
      max: ConfigSchema.shape.DATABASE_POOL_SIZE.parse(undefined),
      name: 'auth',
      statementTimeoutMs: ConfigSchema.shape.DATABASE_STATEMENT_TIMEOUT_MS.parse(undefined),
      synchronousCommit: 'off',
    })
  : null;

const answer: RequestHandler = sql
  ? async (req, res) => {
      const key = parseBearer(req.get('authorization'));
      const [row] =
        key === null
          ? []
          : await sql`
              select id, account_id, environment, scopes, revoked_at
              from api_keys
              where key_hash = ${hashApiKey(key)}
            `;
      if (!row) res.status(401).json({ error: 'unknown key' });
      else res.json(body);
    }
  : (_req, res) => {
      res.json(body);
    };

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get('/ready', (_req, res) => {
  res.json({ ok: true });
});
if (method === 'POST') app.post(route, express.json(), answer);
else app.get(route, answer);

const server = app.listen(port, '127.0.0.1');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.close(() => void (sql ? sql.end({ timeout: 1 }) : Promise.resolve()).then(() => process.exit(0)));
    server.closeAllConnections();
  });
}
