// The platform-overhead baseline: a bare Express 5 app with one route that
// answers a small JSON body. No auth, no validation, no envelope, no request
// id, no metrics, no database. It uses the service's two app settings that
// only remove work (no X-Powered-By, no ETag), so the comparison isolates the
// service's own middleware and handler. A POST route parses its JSON body, as
// any Express JSON endpoint would.
//
// Started by startBareServer() in bench/lib/service.ts as a child process, like the
// service, with BARE_PORT, BARE_METHOD, BARE_PATH and BARE_BODY.
import express from 'express';

const port = Number(process.env.BARE_PORT ?? 0);
const method = (process.env.BARE_METHOD ?? 'GET').toUpperCase();
const route = process.env.BARE_PATH ?? '/';
const body: unknown = JSON.parse(process.env.BARE_BODY ?? '{}');

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get('/ready', (_req, res) => {
  res.json({ ok: true });
});
if (method === 'POST') {
  app.post(route, express.json(), (_req, res) => {
    res.json(body);
  });
} else {
  app.get(route, (_req, res) => {
    res.json(body);
  });
}

const server = app.listen(port, '127.0.0.1');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
