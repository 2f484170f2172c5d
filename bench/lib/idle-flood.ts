// A hostile client for bench/idle-sockets.ts and
// test/integration/connections.test.ts, run as a child process so that its
// churn is not on the event loop of the service it floods: holds COUNT
// connections from LOCAL_ADDRESS to HOST:PORT, sends nothing on them, and
// opens a new one as soon as any is closed. It prints one JSON line once
// every connection has been accepted at least once ({"ready": true}), and,
// when its standard input ends, closes everything and prints its counts
// ({"connects", "closes"}) before exiting.
import { connect, type Socket } from 'node:net';

const port = Number(process.env.PORT);
const host = process.env.HOST!;
const localAddress = process.env.LOCAL_ADDRESS!;
const count = Number(process.env.COUNT);

const sockets = new Set<Socket>();
const accepted = new Uint8Array(count);
let everAccepted = 0;
let connects = 0;
let closes = 0;
let stopping = false;

function open(slot: number): void {
  const socket = connect({ port, host, localAddress });
  sockets.add(socket);
  socket.on('error', () => {});
  socket.once('connect', () => {
    connects++;
    if (accepted[slot]) return;
    accepted[slot] = 1;
    if (++everAccepted === count) process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  });
  socket.once('close', () => {
    sockets.delete(socket);
    closes++;
    if (!stopping) setImmediate(() => open(slot));
  });
}

for (let slot = 0; slot < count; slot++) open(slot);

process.stdin.resume();
process.stdin.once('end', () => {
  stopping = true;
  for (const socket of sockets) socket.destroy();
  process.stdout.write(`${JSON.stringify({ connects, closes })}\n`, () => process.exit(0));
});
