// sandboxd itself against a misbehaving host: garbage, oversized frames, malformed requests. It must
// answer what it can with an error code, skip what it cannot parse, and keep serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  encodeFrame,
  FrameDecoder,
  MAX_BINARY_BYTES,
  RESYNC_MARKER,
} from '../../../sandbox-wire/protocol.ts';
import { type LocalSandboxd, startLocalSandboxd } from './harness.ts';

let sd: LocalSandboxd;
beforeAll(async () => {
  sd = await startLocalSandboxd();
});
afterAll(async () => {
  await sd?.stop();
});

/** Speak the raw protocol to the local sandboxd; returns every message it sends back. */
const raw = () => {
  const got: Array<Record<string, unknown>> = [];
  const decoder = new FrameDecoder({ onMessage: (m) => got.push(m), onError: () => {} });
  const onData = (b: Buffer) => decoder.push(b);
  sd.child.stdout.on('data', onData);
  return {
    got,
    send: (bytes: Buffer) => sd.child.stdin.write(bytes),
    waitFor: async (pred: (m: Record<string, unknown>) => boolean) => {
      for (let i = 0; i < 100; i++) {
        const m = got.find(pred);
        if (m) return m;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`no such message in ${JSON.stringify(got)}`);
    },
    stop: () => sd.child.stdout.off('data', onData),
  };
};

describe('sandboxd under a misbehaving host', () => {
  it('answers malformed requests with error codes and survives garbage and huge frames', async () => {
    const r = raw();
    r.send(Buffer.concat([RESYNC_MARKER, encodeFrame({ t: 'hello', v: 1, session: 'raw' })]));
    await r.waitFor((m) => m.t === 'hello');
    r.send(encodeFrame({ t: 'req', id: 1, op: 'rm -rf /', args: {} }));
    r.send(encodeFrame({ t: 'req', id: 2, op: 'stat', args: { path: 42 } }));
    r.send(encodeFrame({ t: 'req', id: 3, op: 'readFile', args: { path: '../../etc/passwd' } }));
    r.send(encodeFrame({ t: 'req', id: 4, op: 'exec', args: { command: 'true', env: { 'BAD NAME': 'x' } } }));
    r.send(encodeFrame({ t: 'req', id: 5, op: 'jobOutput', args: { id: '../../../etc' } }));
    const codes = [];
    for (const id of [1, 2, 3, 4, 5])
      codes.push(((await r.waitFor((m) => m.id === id)).error as { code: string }).code);
    expect(codes).toEqual([
      'INVALID_ARGUMENTS',
      'INVALID_ARGUMENTS',
      'PATH_OUTSIDE_WORKSPACE',
      'INVALID_ARGUMENTS',
      'JOB_NOT_FOUND',
    ]);

    const huge = Buffer.alloc(4);
    huge.writeUInt32BE(0x7fffffff);
    r.send(huge);
    r.send(Buffer.from('{"t":"req","id":9,"op":"ping","args":{}} and then some garbage \u0000\u0001'));
    r.stop();
    // The next client's hello resynchronises the stream; sandboxd never stopped.
    const c = await sd.connect();
    expect(await c.ping()).toBeGreaterThanOrEqual(0);
    expect(sd.child.exitCode).toBe(null);
    expect(sd.stderr()).toMatch(/bad input \(frame length \d+ is outside/);
    c.close();
  });

  it('answers a result too large for one frame with PAYLOAD_TOO_LARGE, and stays usable', async () => {
    const c = await sd.connect();
    // 9000 matching lines of 2000 characters: the grep answer is ~18 MiB, over the 16 MiB limit.
    await c.exec("head -c 18000000 /dev/zero | tr '\\0' a | fold -w 2000 > wide.txt");
    await expect(c.fs.grep('a', { path: 'wide.txt', limit: 100_000 })).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
    });
    expect((await c.fs.grep('a', { path: 'wide.txt', limit: 3 })).matches).toHaveLength(3);
    c.close();
  });

  it('reads and writes the largest binary payload one frame can carry', async () => {
    const c = await sd.connect({ maxReadBytes: Number.MAX_SAFE_INTEGER }); // clamped to one frame
    const data = Buffer.alloc(MAX_BINARY_BYTES, 0xab);
    await c.fs.writeFile('max.bin', data);
    expect((await c.fs.readFile('max.bin')).equals(data)).toBe(true);
    await expect(c.fs.writeFile('over.bin', Buffer.alloc(MAX_BINARY_BYTES + 1))).rejects.toMatchObject({
      code: 'FILE_TOO_LARGE',
    });
    c.close();
  });
});
