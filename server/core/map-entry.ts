/**
 * The value `map` holds for `key`, for a caller that built or was given the
 * map with an entry for every key it asks for (a plan per instrument read, a
 * row per id sent). A missing entry is a fault in that caller: it is thrown
 * here, where it happened, rather than read on as undefined.
 */
export function entryOf<K, V extends NonNullable<unknown> | null>(map: ReadonlyMap<K, V>, key: K): V {
  const value = map.get(key);
  if (value === undefined) throw new Error(`no map entry for ${String(key)}`);
  return value;
}
