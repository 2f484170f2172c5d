import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../observability/logger.ts';
import type { StreamSlot } from '../http/stream-slots.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { dailyBarIngest, intradayBarIngest } from './ingest.ts';
import {
  BulkPricesDataSchema,
  BulkPricesMetaSchema,
  BulkPricesQuerySchema,
  DailyBarSchema,
  DailyPricesMetaSchema,
  DailyPricesQuerySchema,
  IntradayBarSchema,
  IntradayMetaSchema,
  IntradayQuerySchema,
} from './schema.ts';
import * as service from './service.ts';
import { bulkText } from './bulk-stream.ts';
import { InstrumentParamsSchema } from '../core/ids.ts';
import { csvFraming, jsonFraming, sendFramed, streamFramed, type Encoding, type Framing } from '../http/envelope.ts';
import { FORMAT_TYPES, negotiateFormat } from '../http/format.ts';
import type { Format } from '../core/params.ts';
import { COLUMNAR_INPUT, openBarFile, type BarKind } from './bar-files.ts';

const TAG = 'Prices';

const isColumnar = (format: Format): format is 'arrow' | 'parquet' => format === 'arrow' || format === 'parquet';

/** What the read hands over for an answer in `format`: its text, or for a columnar file what the file is made from (bar-files.ts). */
const readFormat = <Kind extends BarKind>(format: Format, kind: Kind) => (isColumnar(format) ? COLUMNAR_INPUT[kind] : format);

/** A single instrument's answer in `format`: the JSON envelope, CSV, or a columnar file of its bars and their symbols. */
function answerFraming(format: Format, kind: BarKind, instrumentId: string, answer: service.PriceText): Framing | Encoding {
  if (format === 'json') return jsonFraming('array');
  if (format === 'csv') return csvFraming(service.CSV_COLUMNS[kind]);
  return {
    type: FORMAT_TYPES[format],
    async body(items, meta) {
      const parts: Buffer[] = [];
      const file = openBarFile(format, kind, async (chunk) => void parts.push(chunk));
      await file.add(instrumentId, items, answer.symbols);
      return [await file.end(meta), ...parts];
    },
  };
}

/** The columnar answers' OpenAPI description. */
const COLUMNAR =
  "columns instrumentId, symbol (the instrument's symbol on the bar's date, the UTC day of an intraday bar; null where it had none), then the fields of data with their names: dates as date32 (Parquet DATE), instants as UTC timestamps in milliseconds, prices and volume as float64 with exactly the JSON values, strings dictionary-encoded, nulls as nulls; one row per bar in the CSV order; the meta as JSON text under the key `meta` of the Arrow schema or Parquet file metadata";
const DAILY_CSV = `columns ${service.CSV_COLUMNS.daily.join(', ')} (symbol: the instrument's symbol on barDate, empty where it had none); one row per bar (instrument by instrument, in date order), then the #meta row`;

export const dailyPricesRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/prices',
  operationId: 'getDailyPrices',
  tag: TAG,
  summary: 'Daily bars of one instrument, raw or adjusted as of a point in time',
  description:
    "The bars dated from from to to; with adjusted=true, adjusted backward for splits, stock dividends and cash dividends. The actions applied are those of the instrument's current action set, or of the version pinned with actionSetVersion, whose bars are also read as they stood then; with asOf, each bar as it was known at the cut-off (its latest revision known then; a bar first known later is absent) and only actions known by then; backfilled actions only with includeBackfilled=true. A pinned version read again with the same asOf and includeBackfilled gives the same data, whatever was uploaded since. meta.priceBasis says what was applied and what could not be, meta.actionCoverage whether the action history was checked against a source.",
  scope: 'prices:read',
  params: InstrumentParamsSchema,
  query: DailyPricesQuerySchema,
  response: {
    status: 200,
    description: 'the bars in date order',
    data: z.array(DailyBarSchema),
    meta: DailyPricesMetaSchema,
    csv: DAILY_CSV,
    columnar: COLUMNAR,
    validated: true,
  },
  errors: ['not_found'],
});

export const bulkPricesRoute = defineRoute({
  method: 'get',
  path: '/prices/bulk',
  operationId: 'getBulkPrices',
  tag: TAG,
  summary: 'Daily bars of up to 500 instruments, streamed',
  description:
    "The body is streamed as it is read, each instrument's series from one statement. A failure after the first byte cuts the connection rather than sending a partial document.",
  scope: 'prices:read',
  query: BulkPricesQuerySchema,
  response: {
    status: 200,
    description: 'bars by instrument id',
    headers: { 'Cache-Control': '`no-store`: the bytes are not known before the first is sent, so the answer has no ETag to revalidate against' },
    data: BulkPricesDataSchema,
    meta: BulkPricesMetaSchema,
    csv: DAILY_CSV,
    columnar: COLUMNAR,
  },
  errors: [],
});

export const intradayRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/intraday',
  operationId: 'getIntradayBars',
  tag: TAG,
  summary: 'Intraday bars in UTC buckets of 1 minute to 1 hour',
  description:
    'The stored 1-minute bars of the UTC days from from to to, or their rollups into buckets labelled by their start and cut from 2000-01-03T00:00Z; a bucket holds only the minutes that exist, and an empty bucket is not sent. Never adjusted. With asOf, each 1-minute bar as it was known at that instant, and coarser intervals bucketed at read from those minutes (meta.readFrom). Served for equity, etf, index and crypto instruments; other asset classes are a 400.',
  scope: 'prices:read',
  params: InstrumentParamsSchema,
  query: IntradayQuerySchema,
  response: {
    status: 200,
    description: 'the bars in time order',
    data: z.array(IntradayBarSchema),
    meta: IntradayMetaSchema,
    csv: `columns ${service.CSV_COLUMNS.intraday.join(', ')} (symbol: the instrument's symbol on the UTC day of barTimestamp, empty where it had none); one row per bar, then the #meta row`,
    columnar: COLUMNAR,
    validated: true,
  },
  errors: ['not_found'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface PricesDeps {
  readDb: Reads;
  config: Pick<Config, 'DATABASE_POOL_SIZE' | 'BULK_STREAMS_PER_ACCOUNT' | 'BULK_STREAMS_MAX' | 'CLIENT_IDLE_TIMEOUT_MS'>;
  logger: Logger;
  /** Download admission for `route`: this process's own slots, or the primary's when several processes serve (runtime/primary-link.ts). */
  downloadSlots: (
    route: string,
    limits: { perAccount: number; total: number },
  ) => { admit(accountId: string, cut: () => void): StreamSlot | Promise<StreamSlot> };
}

export const pricesArea: Area<PricesDeps, AnyIngestKind> = {
  routes: [dailyPricesRoute, bulkPricesRoute, intradayRoute],
  mount(routes, { readDb, config, logger, downloadSlots }) {
    routes.handle(dailyPricesRoute, async ({ params, query }, res, req) => {
      const format = negotiateFormat(req, res, query.format);
      const answer = await service.readDailyPrices(readDb, params.id, query, readFormat(format, 'daily'));
      return sendFramed(req, res, answerFraming(format, 'daily', params.id, answer), answer);
    });

    const halfThePool = Math.max(1, Math.floor(config.DATABASE_POOL_SIZE / 2));
    const bulkSlots = downloadSlots('/v1/prices/bulk', { perAccount: config.BULK_STREAMS_PER_ACCOUNT, total: config.BULK_STREAMS_MAX ?? halfThePool });
    // All downloads together read at most two pages at once (a download's
    // plan, one short read, takes the pool like any request). Each download
    // reads a page while it writes the previous one, so without a lane five
    // downloads could hold all ten connections of the default pool. A page
    // costs PostgreSQL the CPU of adjusting and packing its bars, or writing
    // their CSV rows (a bulk read of 500 instruments' year, 19 pages, took it
    // about 760 ms packed), and the request thread a copy, or the JSON it
    // writes from the packed bars, so two at a time keep a download fed and
    // leave PostgreSQL's other cores to every other request.
    const bulkPages = readDb.lane('bulk', Math.min(2, halfThePool));
    routes.handle(bulkPricesRoute, async ({ query: q }, res, req) => {
      const format = negotiateFormat(req, res, q.format);
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- the route's scope check ran before the handler and set the key's auth
      const slot = await bulkSlots.admit(res.locals.auth!.accountId, () => {
        logger.info({ requestId: res.locals.requestId, route: '/v1/prices/bulk' }, 'download cut: its slot went to an account with fewer downloads open');
        res.destroy();
      });
      const pages = { lane: bulkPages, nextPageWaitMs: config.CLIENT_IDLE_TIMEOUT_MS };
      try {
        if (isColumnar(format)) {
          // The file carries its meta itself (bar-files.ts): no text around it.
          const bare = { type: FORMAT_TYPES[format], open: Buffer.alloc(0), close: () => Buffer.alloc(0) };
          return await streamFramed(res, bare, (write) => service.streamBulkFile(readDb, q, format, write, pages), slot);
        }
        const framing = format === 'json' ? jsonFraming('object') : csvFraming(service.CSV_COLUMNS.daily);
        return await streamFramed(
          res,
          framing,
          async (write) => {
            const text = bulkText(format, write);
            const meta = await service.streamBulkPrices(readDb, q, format, text.onSeries, pages);
            await text.flush();
            return meta;
          },
          slot,
        );
      } finally {
        slot.release();
      }
    });

    routes.handle(intradayRoute, async ({ params, query }, res, req) => {
      const format = negotiateFormat(req, res, query.format);
      const answer = await service.readIntradayBars(readDb, params.id, query, readFormat(format, 'intraday'), isColumnar(format));
      return sendFramed(req, res, answerFraming(format, 'intraday', params.id, answer), answer);
    });
  },
  ingest: { 'bars/daily': dailyBarIngest, 'bars/intraday': intradayBarIngest },
};
