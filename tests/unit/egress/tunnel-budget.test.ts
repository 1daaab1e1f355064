// A tunnel whose budget must ask the central counter before some bytes go (replicas:
// host/egress/budget-shared.ts answers `take` with a promise once the chunk in hand is spent):
// the bytes reach the upstream in the order the client sent them, none before its take was
// granted, and a refused take cuts both ends with nothing more sent.
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { duplexPair } from 'node:stream';
import { afterEach, expect, it } from 'vitest';
import type { BudgetLease } from '../../../host/egress/budget.ts';
import { splice } from '../../../host/egress/tunnel.ts';
import { until } from '../../helpers/until.ts';

let server: Server | undefined;
afterEach(() => server?.close());

/** An upstream that keeps what it received; the socket the gateway would have opened to it. */
async function upstream(): Promise<{ received: () => string; ended: () => boolean; socket: Socket }> {
  const chunks: Buffer[] = [];
  let ended = false;
  server = createServer((s) =>
    s
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => {
        ended = true;
      }),
  );
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', () => resolve()));
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  return { received: () => Buffer.concat(chunks).toString(), ended: () => ended, socket };
}

/** A lease whose every take waits for the test to answer it. */
function askingLease() {
  const asked: Array<{ bytes: number; answer: (ok: boolean) => void }> = [];
  const lease: BudgetLease = {
    charge: () => true,
    take: (bytes) => new Promise<boolean>((answer) => asked.push({ bytes, answer })),
    close: () => {},
  };
  return { lease, asked };
}

it('sends what the client sent in order, each piece only once its take was granted', async () => {
  const up = await upstream();
  const { lease, asked } = askingLease();
  const [client, far] = duplexPair();
  splice(client, up.socket, lease, { idleMs: 0, head: Buffer.from('head|'), onCut: () => {} });
  far.write('one|');
  far.write('two|');
  await until(() => asked.length === 1);
  expect(up.received()).toBe('');
  asked[0]?.answer(true);
  await until(() => asked.length === 2);
  asked[1]?.answer(true);
  await until(() => asked.length === 3);
  asked[2]?.answer(true);
  await until(() => up.received() === 'head|one|two|');
  expect(asked.map((a) => a.bytes)).toEqual([5, 4, 4]);
  up.socket.destroy();
});

it('a refused take cuts both ends and sends nothing more', async () => {
  const up = await upstream();
  const { lease, asked } = askingLease();
  const [client, far] = duplexPair();
  let cut = 0;
  splice(client, up.socket, lease, { idleMs: 0, onCut: () => cut++ });
  far.write('one|');
  await until(() => asked.length === 1);
  asked[0]?.answer(true);
  far.write('two|');
  await until(() => asked.length === 2);
  asked[1]?.answer(false);
  await until(() => cut === 1 && up.socket.destroyed && client.destroyed);
  expect(up.received()).toBe('one|');
});

it('a client that ends while its last bytes wait on the answer ends upstream after them', async () => {
  const up = await upstream();
  const { lease, asked } = askingLease();
  const [client, far] = duplexPair();
  splice(client, up.socket, lease, { idleMs: 0, onCut: () => {} });
  far.end('last|');
  await until(() => asked.length === 1);
  asked[0]?.answer(true);
  await until(() => up.ended());
  expect(up.received()).toBe('last|');
});
