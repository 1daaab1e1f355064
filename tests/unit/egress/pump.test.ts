// The pump that takes a sandbox's proxy connections from sandboxd (host/egress/proxy/index.ts), on
// a sandboxd double: one accept waits at a time, another is asked for as soon as a connection
// arrives, never more than `maxTunnels` connections are open, a closed one frees its place, the
// sandbox is handed its tenant's CA, an old sandboxd that does not know egressAccept is reported
// once (not asked again and again), and stopping cancels what waits.
import { describe, expect, it } from 'vitest';
import { createSandboxEgress } from '../../../host/egress/proxy/index.ts';
import { SandboxError } from '../../../host/errors.ts';
import type { SandboxdEgress } from '../../../host/sandbox/sandboxd/client.ts';

const until = async (check: () => boolean): Promise<void> => {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 5));
  }
};

interface FakeAccept {
  arrive(bytes: string): void;
  close(): void;
  fail(error: Error): void;
  aborted(): boolean;
}

function fakeSandboxd() {
  const accepts: FakeAccept[] = [];
  const trusted: string[] = [];
  const egress: SandboxdEgress = {
    accept(signal) {
      const queue: Array<Buffer | null> = [];
      let wake: (() => void) | undefined;
      let settle: (error?: Error) => void = () => {};
      const result = new Promise<{ bytesIn: number; bytesOut: number }>((resolve, reject) => {
        settle = (error) => (error ? reject(error) : resolve({ bytesIn: 0, bytesOut: 0 }));
      });
      result.catch(() => {});
      const push = (b: Buffer | null): void => {
        queue.push(b);
        wake?.();
      };
      const close = (): void => {
        push(null);
        settle();
      };
      signal?.addEventListener('abort', close, { once: true });
      accepts.push({
        arrive: (bytes) => push(Buffer.from(bytes)),
        close,
        fail: (error) => {
          push(null);
          settle(error);
        },
        aborted: () => signal?.aborted === true,
      });
      const incoming = {
        async *[Symbol.asyncIterator]() {
          for (;;) {
            while (queue.length === 0) await new Promise<void>((r) => (wake = r));
            const piece = queue.shift();
            if (piece === null || piece === undefined) return;
            yield piece;
          }
        },
      };
      const io = { incoming, write: async () => {}, end: async () => {}, abandon: close, opened: () => {} };
      return { io, result };
    },
    trust: async (pem) => {
      trusted.push(pem);
    },
  };
  return { egress, accepts, trusted };
}

const gateway = {
  authorize: async () => {
    throw new Error('unused');
  },
  connect: async () => {
    throw new SandboxError('EGRESS_DENIED', 'no', { data: { reason: 'test' } });
  },
  fetch: async () => new Response('x'),
  intercepts: async () => false,
  audit: () => {},
};
const caller = { tenantId: 't', agentId: 'a', sessionId: 'a', via: 'proxy' as const };

describe('sandbox egress pump', () => {
  it('keeps one accept waiting and at most maxTunnels connections open', async () => {
    const sd = fakeSandboxd();
    const egress = createSandboxEgress({
      gateway,
      callerOf: async () => caller,
      maxTunnels: 2,
      intercept: { caOf: async () => 'CA PEM', contextFor: async () => undefined as never },
    });
    const { stop } = egress.attach('a', sd.egress);
    await until(() => sd.accepts.length === 1);
    await until(() => sd.trusted.length === 1);
    expect(sd.trusted).toEqual(['CA PEM']);
    sd.accepts[0]?.arrive('CONNECT a.test:443 HTTP/1.1\r\n\r\n');
    await until(() => sd.accepts.length === 2);
    sd.accepts[1]?.arrive('CONNECT b.test:443 HTTP/1.1\r\n\r\n');
    await new Promise((r) => setTimeout(r, 50));
    expect(sd.accepts.length).toBe(2); // two open: no third accept until one closes
    sd.accepts[0]?.close();
    await until(() => sd.accepts.length === 3);
    stop();
    await until(() => sd.accepts[2]?.aborted() === true);
    egress.close();
  });

  it('settles `trusted` once the CA is on its way to sandboxd, not before, and not after its answer', async () => {
    const sd = fakeSandboxd();
    let answer: (() => void) | undefined;
    sd.egress.trust = (pem) => {
      sd.trusted.push(pem);
      return new Promise<void>((resolve) => (answer = resolve));
    };
    const ca = Promise.withResolvers<string>();
    const egress = createSandboxEgress({
      gateway,
      callerOf: async () => caller,
      intercept: { caOf: () => ca.promise, contextFor: async () => undefined as never },
    });
    const { stop, trusted } = egress.attach('a', sd.egress);
    let settled = false;
    void trusted.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false); // the tenant's CA is still being made: a command now would miss it
    ca.resolve('CA PEM');
    await trusted;
    expect(sd.trusted).toEqual(['CA PEM']);
    expect(answer).toBeDefined(); // sent, and sandboxd has not answered yet: no round trip waited for
    answer?.();
    stop();
    egress.close();
  });

  it('settles `trusted` at once without interception, and after a failure (reported) or a deleted agent', async () => {
    const plain = createSandboxEgress({ gateway, callerOf: async () => caller });
    const sd = fakeSandboxd();
    const a = plain.attach('a', sd.egress);
    await a.trusted;
    expect(sd.trusted).toEqual([]);
    a.stop();
    plain.close();

    const errors: unknown[] = [];
    const failing = createSandboxEgress({
      gateway,
      callerOf: async () => caller,
      onError: (e) => errors.push(e),
      intercept: {
        caOf: async () => {
          throw new Error('no CA');
        },
        contextFor: async () => undefined as never,
      },
    });
    const b = failing.attach('a', fakeSandboxd().egress);
    await b.trusted;
    expect(errors).toHaveLength(1);
    b.stop();
    failing.close();

    const gone = createSandboxEgress({
      gateway,
      callerOf: async () => undefined,
      intercept: { caOf: async () => 'CA PEM', contextFor: async () => undefined as never },
    });
    const sd3 = fakeSandboxd();
    const c = gone.attach('a', sd3.egress);
    await c.trusted;
    expect(sd3.trusted).toEqual([]);
    c.stop();
    gone.close();
  });

  it('survives a session that ends before sandboxd took its CA: no unhandled rejection, nothing reported', async () => {
    const sd = fakeSandboxd();
    const ended = new SandboxError('SANDBOX_UNAVAILABLE', 'The sandboxd connection was closed by the host.');
    let refuse: ((e: Error) => void) | undefined;
    sd.egress.trust = () => new Promise<void>((_, reject) => (refuse = reject));
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const errors: unknown[] = [];
    const egress = createSandboxEgress({
      gateway,
      callerOf: async () => caller,
      onError: (e) => errors.push(e),
      intercept: { caOf: async () => 'CA PEM', contextFor: async () => undefined as never },
    });
    const { stop } = egress.attach('a', sd.egress);
    await until(() => sd.accepts.length === 1 && refuse !== undefined);
    stop();
    refuse?.(ended);
    // Two turns of the loop: an unhandled rejection is reported after the microtasks drain.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    process.off('unhandledRejection', onUnhandled);
    expect(unhandled).toEqual([]);
    expect(errors).toEqual([]);
    egress.close();
  });

  it('reports an accept sandboxd refuses once, and asks no more', async () => {
    const sd = fakeSandboxd();
    const errors: unknown[] = [];
    const egress = createSandboxEgress({
      gateway,
      callerOf: async () => caller,
      onError: (e) => errors.push(e),
    });
    const { stop } = egress.attach('a', sd.egress);
    await until(() => sd.accepts.length === 1);
    sd.accepts[0]?.fail(
      new SandboxError('INVALID_ARGUMENTS', 'Unknown operation egressAccept or malformed args.'),
    );
    await until(() => errors.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(sd.accepts.length).toBe(1);
    stop();
  });

  it('says nothing when the session ends under a waiting accept', async () => {
    const sd = fakeSandboxd();
    const errors: unknown[] = [];
    const egress = createSandboxEgress({
      gateway,
      callerOf: async () => caller,
      onError: (e) => errors.push(e),
    });
    egress.attach('a', sd.egress);
    await until(() => sd.accepts.length === 1);
    sd.accepts[0]?.fail(new SandboxError('SANDBOX_UNAVAILABLE', 'The connection to sandboxd was lost.'));
    await new Promise((r) => setTimeout(r, 50));
    expect(errors).toEqual([]);
    expect(sd.accepts.length).toBe(1);
    egress.close();
  });
});
