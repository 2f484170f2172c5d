// Password hashing thread (server/dashboard/password.ts). scrypt runs here,
// synchronously, on this thread: the asynchronous crypto.scrypt would run on
// libuv's thread pool, which compression and file reads share, and four
// concurrent hashes there held a gzip price read back for seconds. CommonJS,
// like entry.cjs, so piscina loads it without any loader.
const { scryptSync } = require('node:crypto');

/** `{ password, salt, keyLength, N, r, p, maxmem }` → the derived key. */
module.exports = ({ password, salt, keyLength, N, r, p, maxmem }) => scryptSync(password, salt, keyLength, { N, r, p, maxmem });
