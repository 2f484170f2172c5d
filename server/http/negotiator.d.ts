// The part of npm negotiator 1.x the service uses (its @types describe 0.6,
// which has no `preferred`): the best encoding of those offered by the
// Accept-Encoding's q-values, ties broken by `preferred`'s order.
declare module 'negotiator' {
  import type { IncomingMessage } from 'node:http';
  export default class Negotiator {
    constructor(request: IncomingMessage);
    encoding(available: readonly string[], options?: { preferred?: readonly string[] }): string | undefined;
  }
}
