/** The primary's WAL position as a check sampled it: when it was asked (ms), and the position in bytes. */
export interface WalSample {
  at: number;
  lsn: bigint;
}

/** A pg_lsn's text (`16/B374D848`) as a number of bytes. */
export function lsnBytes(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** The newest sample whose WAL position `replay` has reached (samples ascend in both time and position). */
export function newestReached(samples: readonly WalSample[], replay: bigint): WalSample | undefined {
  for (let i = samples.length - 1; i >= 0; i--) if (samples[i].lsn <= replay) return samples[i];
  return undefined;
}
