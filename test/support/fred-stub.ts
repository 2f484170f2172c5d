import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * FRED on loopback: the one stub the tests allow, standing in for the outside
 * provider. It speaks FRED's formats (https://fred.stlouisfed.org/docs/api/fred/):
 * `series` answers `{ seriess: [...] }`, `series/observations` answers a page
 * of `{ date, value }` rows with "." for a missing value, honouring `limit`
 * and `offset`, and errors come as FRED sends them, HTTP 400 with
 * `{ error_code, error_message }`. It counts its calls per endpoint.
 */

export interface StubSeries {
  title: string;
  units: string;
  /** FRED's long form, e.g. "Daily" or "Monthly". */
  frequency: string;
  /** FRED's short form: D, W, BW, M, Q, SA, A. */
  frequencyShort: string;
  seasonalAdjustmentShort?: string;
  lastUpdated?: string;
  /** As FRED writes them: decimal text, or "." for a missing observation. */
  observations: [date: string, value: string][];
}

/** What the stub does with the next requests. */
export type StubMode = 'serve' | 'http500' | 'hang' | 'garbage';

const BAD_KEY = 'Bad Request.  The value for variable api_key is not registered.  Read https://fred.stlouisfed.org/docs/api/api_key.html for more information.';
const NO_SERIES = 'Bad Request.  The series does not exist.';

export class FredStub {
  readonly calls: Record<string, number> = { series: 0, 'series/observations': 0 };
  readonly series = new Map<string, StubSeries>();
  mode: StubMode = 'serve';
  /** At most this many observations a page, as FRED's `limit` caps them (FRED's own maximum is 100,000). */
  pageCap = 100_000;
  /** Query strings as received, for checking what the service sent. */
  readonly received: URLSearchParams[] = [];
  private readonly sockets = new Set<Socket>();
  private server: Server | null = null;
  url = '';

  readonly apiKey: string;

  constructor(apiKey: string) {
    this.apiKey = apiKey;
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => this.answer(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fred`;
    return this;
  }

  /** Stops listening and drops every open connection: the provider is down (connection refused). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  totalCalls(): number {
    return Object.values(this.calls).reduce((a, b) => a + b, 0);
  }

  private answer(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://stub');
    const endpoint = url.pathname.replace(/^\/fred\//, '');
    this.calls[endpoint] = (this.calls[endpoint] ?? 0) + 1;
    this.received.push(url.searchParams);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (this.mode === 'hang') return; // never answers; the socket is dropped by stop()
    if (this.mode === 'http500') return send(500, '<html><body>Internal Server Error</body></html>');
    if (this.mode === 'garbage') return send(200, '{"observations": "not a list"');
    if (url.searchParams.get('file_type') !== 'json') return send(400, 'XML is the default; the service must ask for json');
    if (url.searchParams.get('api_key') !== this.apiKey) return send(400, { error_code: 400, error_message: BAD_KEY });
    const id = url.searchParams.get('series_id') ?? '';
    const series = this.series.get(id);
    if (!series) return send(400, { error_code: 400, error_message: NO_SERIES });
    const today = '2026-11-24';
    if (endpoint === 'series') {
      return send(200, {
        realtime_start: today,
        realtime_end: today,
        seriess: [
          {
            id,
            realtime_start: today,
            realtime_end: today,
            title: series.title,
            observation_start: series.observations[0]?.[0] ?? '',
            observation_end: series.observations.at(-1)?.[0] ?? '',
            frequency: series.frequency,
            frequency_short: series.frequencyShort,
            units: series.units,
            units_short: series.units,
            seasonal_adjustment: series.seasonalAdjustmentShort === 'SA' ? 'Seasonally Adjusted' : 'Not Seasonally Adjusted',
            seasonal_adjustment_short: series.seasonalAdjustmentShort ?? 'NSA',
            last_updated: series.lastUpdated ?? '2026-11-23 15:16:02-06',
            popularity: 80,
            notes: 'stub',
          },
        ],
      });
    }
    if (endpoint === 'series/observations') {
      const limit = Math.min(Number(url.searchParams.get('limit') ?? 100_000), this.pageCap);
      const offset = Number(url.searchParams.get('offset') ?? 0);
      return send(200, {
        realtime_start: today,
        realtime_end: today,
        observation_start: '1600-01-01',
        observation_end: '9999-12-31',
        units: 'lin',
        output_type: 1,
        file_type: 'json',
        order_by: 'observation_date',
        sort_order: 'asc',
        count: series.observations.length,
        offset,
        limit,
        observations: series.observations.slice(offset, offset + limit).map(([date, value]) => ({ realtime_start: today, realtime_end: today, date, value })),
      });
    }
    send(404, { error_code: 404, error_message: 'Not Found.' });
  }
}
