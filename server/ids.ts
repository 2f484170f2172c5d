import { createHash } from 'node:crypto';

/**
 * A name-based UUID: the first 16 bytes of SHA-1 over `namespace` (its 16
 * bytes, when given) followed by `name` in UTF-8, with the version nibble set
 * to 5 and the variant bits to 10. With a namespace this is RFC 9562 version 5;
 * without one the name carries its own prefix (`corporate-action:…`,
 * `economic-event:…`). The same text always gives the same id, so a row
 * posted again without an id finds the row it made before.
 */
export function nameBasedUuid(name: string, namespace?: string): string {
  const hash = createHash('sha1');
  if (namespace !== undefined) hash.update(Buffer.from(namespace.replace(/-/g, ''), 'hex'));
  const bytes = hash.update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
