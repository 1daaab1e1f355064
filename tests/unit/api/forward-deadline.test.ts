// The forward's connect deadline against a blocked event loop: a connection the kernel made while
// the process was busy past the deadline is seen as made (a starved replica does not call a live
// owner unreachable), and a connection that is truly not made still fails at the deadline.
import { connect, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDeadline } from '../../../host/api/forward/deadline.ts';

/** Keeps the thread busy for `ms`: the event loop runs nothing meanwhile. */
const block = (ms: number): void => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('connectDeadline', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sees a connection made while the loop was blocked past the deadline', async () => {
    const outcome = await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      const deadline = connectDeadline(20, () => {
        socket.destroy();
        resolve('timed out');
      });
      socket.once('connect', () => {
        deadline.cancel();
        socket.destroy();
        resolve('connected');
      });
      block(300);
    });
    expect(outcome).toBe('connected');
  });

  it('fires when nothing came in', async () => {
    const fired = await new Promise<boolean>((resolve) => {
      connectDeadline(10, () => resolve(true));
    });
    expect(fired).toBe(true);
  });

  it('never fires once cancelled, even when already due', async () => {
    let fired = false;
    const deadline = connectDeadline(5, () => {
      fired = true;
    });
    block(30);
    deadline.cancel();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(fired).toBe(false);
  });
});
