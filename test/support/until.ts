/**
 * Resolves with the first truthy value `condition` returns, asking again every
 * `intervalMs` (20 by default); rejects naming `what` once `timeoutMs` has
 * passed without one. A test waits with this for the state it needs, not for a
 * time it hopes is long enough.
 */
export async function until<T>(
  condition: () => T | Promise<T>,
  { timeoutMs, what, intervalMs = 20 }: { timeoutMs: number; what: string; intervalMs?: number },
): Promise<Exclude<T, false | 0 | '' | null | undefined>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as Exclude<T, false | 0 | '' | null | undefined>;
    if (performance.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
