import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { rangeOf } from '../../server/http/file-body.ts';
import { planFiles } from '../../server/exports/job.ts';
import { ExportLinks } from '../../server/exports/links.ts';
import { ExportRequestSchema } from '../../server/exports/schema.ts';

describe('export file ranges', () => {
  it.each([
    ['bytes=0-9', [0, 10]],
    ['bytes=10-', [10, 100]],
    ['bytes=-7', [93, 100]],
    ['bytes=-500', [0, 100]],
    ['bytes=90-500', [90, 100]],
    ['bytes=99-99', [99, 100]],
  ] as const)('when Range is %s of 100 bytes, then the range is %j (end exclusive)', (header, range) => {
    expect(rangeOf(header, 100)).toEqual(range);
  });

  it.each(['bytes=100-', 'bytes=100-200', 'bytes=-0'])('when Range is %s of 100 bytes, then it cannot be satisfied', (header) => {
    expect(rangeOf(header, 100)).toBe('unsatisfiable');
  });

  it.each([undefined, '', 'items=0-9', 'bytes=0-9,20-29', 'bytes=9-3', 'bytes=-', 'bytes=a-b'])('when Range is %j, then the whole file is sent', (header) => {
    expect(rangeOf(header, 100)).toBeNull();
  });
});

describe('export files of a request', () => {
  it('when daily bars span three calendar years, then there is one file per year, the first and last clipped to the window', () => {
    expect(planFiles({ dataset: 'daily-prices', from: '2019-06-15', to: '2021-02-01', format: 'csv', compression: 'zstd' })).toEqual([
      { name: '2019.csv.zst', from: '2019-06-15', to: '2019-12-31' },
      { name: '2020.csv.zst', from: '2020-01-01', to: '2020-12-31' },
      { name: '2021.csv.zst', from: '2021-01-01', to: '2021-02-01' },
    ]);
  });

  it('when intraday bars cross a year end and a leap February, then there is one file per month, each ending on its last day', () => {
    expect(planFiles({ dataset: 'intraday-bars', from: '2023-12-10', to: '2024-02-10', format: 'parquet', compression: 'none' })).toEqual([
      { name: '2023-12.parquet', from: '2023-12-10', to: '2023-12-31' },
      { name: '2024-01.parquet', from: '2024-01-01', to: '2024-01-31' },
      { name: '2024-02.parquet', from: '2024-02-01', to: '2024-02-10' },
    ]);
  });

  it('when the request validates, then the span limit of intraday exports is the one of its interval', () => {
    const base = { dataset: 'intraday-bars', from: '2020-01-01', format: 'arrow' };
    expect(ExportRequestSchema.safeParse({ ...base, interval: '1min', to: '2021-01-01' }).success).toBe(true);
    expect(ExportRequestSchema.safeParse({ ...base, interval: '1min', to: '2021-01-02' }).success).toBe(false);
    expect(ExportRequestSchema.safeParse({ ...base, interval: '5min', to: '2025-01-04' }).success).toBe(true);
  });
});

describe('export file links', () => {
  const key = randomBytes(32);
  const links = new ExportLinks(async () => key);
  const id = '0b6f0f0e-7b3c-4c1e-9d59-2b0c8f6f1a11';
  const future = new Date(Date.now() + 3_600_000);

  it('when a link is made, then it verifies for its job and file only, and not once expired', async () => {
    const query = new URLSearchParams(await links.query(id, '2012.parquet', future));
    const [expires, signature] = [query.get('expires') ?? '', query.get('signature') ?? ''];
    expect(await links.check(id, '2012.parquet', expires, signature)).toBe('valid');
    expect(await links.check(id, '2013.parquet', expires, signature)).toBe('forged');
    expect(await links.check(id.replace('0b6f', '1b6f'), '2012.parquet', expires, signature)).toBe('forged');
    expect(await links.check(id, '2012.parquet', String(Number(expires) + 1), signature)).toBe('forged');
    expect(await links.check(id, '2012.parquet', expires, signature, future.getTime() + 1000)).toBe('expired');
  });

  it("when a link is signed under another deployment's key, then it does not verify", async () => {
    const other = new ExportLinks(async () => randomBytes(32));
    const query = new URLSearchParams(await other.query(id, '2012.parquet', future));
    expect(await links.check(id, '2012.parquet', query.get('expires') ?? '', query.get('signature') ?? '')).toBe('forged');
  });
});
