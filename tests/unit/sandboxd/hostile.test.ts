// The host client against a fake sandboxd whose every byte the test controls: whatever it sends,
// the client's calls fail with a stable code and the host process keeps running.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { DOCKER_DEFAULT_MAXIMA } from '../../../host/sandbox/docker/config.ts';
import {
  connectSandboxd,
  MAX_OUTPUT_BYTES,
  type SandboxdClient,
} from '../../../host/sandbox/sandboxd/client.ts';
import { WIRE_ERROR_CODES } from '../../../sandbox-wire/errors.ts';
import { encodeFrame, FrameDecoder, MAX_FRAME_BYTES, RESYNC_MARKER } from '../../../sandbox-wire/protocol.ts';
import { FAKE_ROOT, fakeSandboxd } from './fake.ts';

const ROOT = FAKE_ROOT;

const fake = (onRequest: Parameters<typeof fakeSandboxd>[0]) => fakeSandboxd(onRequest, { streams: 0 });
const res = (id: unknown, value: unknown) => encodeFrame({ t: 'res', id, ok: true, value });
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );
const expectDead = async (client: SandboxdClient, code: string) => {
  expect((await client.closed).code).toBe(code);
  expect(await codeOf(client.ping())).toBe(code);
};

describe('host client against a hostile sandboxd', () => {
  it('works with a well-behaved fake (skipping bytes before the marker)', async () => {
    const { client } = await fake((req, reply) => reply(res(req.id, {})));
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
    client.close();
  });

  it('garbage after the handshake fails pending calls with SANDBOX_PROTOCOL', async () => {
    const { client } = await fake((_req, reply) =>
      reply(Buffer.from([0, 0, 0, 5, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b])),
    );
    expect(await codeOf(client.fs.stat('a'))).toBe('SANDBOX_PROTOCOL');
    await expectDead(client, 'SANDBOX_PROTOCOL');
  });

  it('an oversized frame header fails the connection without buffering the body', async () => {
    const huge = Buffer.alloc(4);
    huge.writeUInt32BE(MAX_FRAME_BYTES + 1);
    const { client } = await fake((_req, reply) => reply(huge));
    const pending = [client.fs.stat('a'), client.exec('true'), client.jobs.list()];
    expect(await Promise.all(pending.map(codeOf))).toEqual([
      'SANDBOX_PROTOCOL',
      'SANDBOX_PROTOCOL',
      'SANDBOX_PROTOCOL',
    ]);
  });

  it('schema violations fail the connection: wrong types, paths outside the root', async () => {
    const bad = [
      {
        t: 'res',
        id: 1,
        ok: true,
        value: { path: '/etc/passwd', type: 'file', size: 1, mtimeMs: 1, mode: 420 },
      },
      { t: 'res', id: 1, ok: 'yes' },
      { t: 'out', id: 1, stream: 'stdin', data: '' },
      {
        t: 'res',
        id: 1,
        ok: true,
        value: { path: `${ROOT}/a`, type: 'socket', size: -1, mtimeMs: 1, mode: 420 },
      },
    ];
    for (const frame of bad) {
      const { client } = await fake((req, reply) => reply(encodeFrame({ ...frame, id: req.id })));
      expect(await codeOf(client.fs.stat('a'))).toBe('SANDBOX_PROTOCOL');
    }
  });

  it('a ranged read answered with more bytes than asked for, or than the file has, closes the connection', async () => {
    const answers = [
      { data: Buffer.from('12345').toString('base64'), size: 100 }, // asked for 4
      { data: Buffer.from('12').toString('base64'), size: 1 }, // the file has 1 byte
    ];
    for (const value of answers) {
      const { client } = await fake((req, reply) => reply(res(req.id, value)));
      expect(await codeOf(client.fs.readRange('a', 0, 4))).toBe('SANDBOX_PROTOCOL');
      await expectDead(client, 'SANDBOX_UNAVAILABLE'); // closed by the host: nothing more is read
    }
  });

  it('a read answered without its bytes, or with a stat outside the root, fails the connection', async () => {
    const plain = await fake((req, reply) => reply(res(req.id, {})));
    expect(await codeOf(plain.client.fs.readFile('a'))).toBe('SANDBOX_PROTOCOL');
    await expectDead(plain.client, 'SANDBOX_UNAVAILABLE'); // closed by the host
    const outside = { path: '/etc/passwd', type: 'file', size: 1, mtimeMs: 1, mode: 420 };
    const withStat = await fake((req, reply) => reply(res(req.id, { data: 'eA==', stat: outside })));
    expect(await codeOf(withStat.client.fs.readWithStat('a'))).toBe('SANDBOX_PROTOCOL');
    await expectDead(withStat.client, 'SANDBOX_PROTOCOL');
  });

  it('readWithStat still works with a sandboxd that predates it (one stat more)', async () => {
    const ops: unknown[] = [];
    const stat = { path: `${ROOT}/a`, type: 'file', size: 1, mtimeMs: 1, mode: 420 };
    const { client } = await fake((req, reply) => {
      ops.push(req.op);
      reply(res(req.id, req.op === 'stat' ? stat : { data: 'eA==' }));
    });
    const read = await client.fs.readWithStat('a');
    expect([read.stat, read.data?.toString()]).toEqual([stat, 'x']);
    expect(ops).toEqual(['readFile', 'stat']);
    client.close();
  });

  it('ignores answers to unknown ids and keeps working', async () => {
    const { client } = await fake((req, reply) => {
      reply(res(999, { anything: true }));
      reply(encodeFrame({ t: 'out', id: 12345, stream: 'stdout', data: 'aGk=' }));
      reply(res(req.id, {}));
    });
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
  });

  it('passes through a known error code and maps an unknown one to SANDBOX_PROTOCOL', async () => {
    const { client } = await fake((req, reply) =>
      reply(
        encodeFrame({
          t: 'res',
          id: req.id,
          ok: false,
          error: {
            code: (req.args as { path: string }).path.endsWith('a') ? 'FILE_NOT_FOUND' : 'EVIL',
            message: 'm',
          },
        }),
      ),
    );
    expect(await codeOf(client.fs.stat('a'))).toBe('FILE_NOT_FOUND');
    expect(await codeOf(client.fs.stat('b'))).toBe('SANDBOX_PROTOCOL');
    expect(await client.fs.exists('a')).toBe(false);
  });

  it('keeps every code on the wire list as the service error of that code, with its message', async () => {
    const { client } = await fake((req, reply) => {
      const code = (req.args as { path: string }).path.slice(`${ROOT}/`.length);
      reply(encodeFrame({ t: 'res', id: req.id, ok: false, error: { code, message: `no: ${code}` } }));
    });
    for (const code of WIRE_ERROR_CODES) {
      const error = await client.fs.stat(code).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, code).toBeInstanceOf(SandboxError);
      expect(error).toMatchObject({ code, message: `no: ${code}` });
    }
    client.close();
  });

  it("turns a service code that is not on sandboxd's list into SANDBOX_PROTOCOL and keeps the connection", async () => {
    const offList = ['UNAUTHORIZED', 'SANDBOX_UNAVAILABLE', 'STORE_BUDGET_EXCEEDED', 'RATE_LIMITED'];
    const { client } = await fake((req, reply) => {
      const code = (req.args as { path: string }).path.slice(`${ROOT}/`.length);
      if (code === 'ok')
        reply(res(req.id, { path: `${ROOT}/ok`, type: 'file', size: 1, mtimeMs: 1, mode: 420 }));
      else reply(encodeFrame({ t: 'res', id: req.id, ok: false, error: { code, message: 'trust me' } }));
    });
    for (const code of offList) {
      const error = await client.fs.stat(code).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, code).toBeInstanceOf(SandboxError);
      expect(error).toMatchObject({ code: 'SANDBOX_PROTOCOL', data: { op: 'stat', sandboxdCode: code } });
      expect((error as Error).message).toContain(`error code "${code}", which it may not send`);
    }
    expect(await client.fs.stat('ok')).toMatchObject({ type: 'file' }); // one bad answer fails one call
    client.close();
  });

  /** A sandboxd that answers any exec with `count` stdout frames of `chunk` (base64), ignoring its cap. */
  const flooding = (chunk: string, count: number) => {
    const toHost = new PassThrough();
    const fromHost = new PassThrough();
    const decoder = new FrameDecoder({
      onMessage: (m) => {
        if (m.t === 'hello')
          toHost.write(
            Buffer.concat([
              RESYNC_MARKER,
              encodeFrame({ t: 'hello', v: 1, session: m.session, pid: 1, root: ROOT, node: 'x' }),
            ]),
          );
        if (m.t === 'req') {
          for (let i = 0; i < count; i++)
            toHost.write(encodeFrame({ t: 'out', id: m.id, stream: 'stdout', data: chunk }));
          toHost.write(
            encodeFrame({
              t: 'res',
              id: m.id,
              ok: true,
              value: { exitCode: 0, timedOut: false, truncated: false, durationMs: 1 },
            }),
          );
        }
      },
      onError: () => {},
    });
    fromHost.on('data', (b: Buffer) => decoder.push(b));
    return { input: toHost, output: fromHost, root: ROOT };
  };

  it('caps streamed exec output on the host even when sandboxd ignores the cap', async () => {
    const sandboxd = flooding(Buffer.alloc(1000, 97).toString('base64'), 10);
    const client = await connectSandboxd({ ...sandboxd, maxOutputBytes: 2500 });
    const r = await client.exec('yes');
    expect(r.stdout.length).toBe(2500);
    expect(r.truncated).toBe(true);
  });

  it('caps exec output at MAX_OUTPUT_BYTES whatever cap it is given (a remote node answers the limits)', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 97).toString('base64');
    const sandboxd = flooding(chunk, MAX_OUTPUT_BYTES / (1024 * 1024) + 4);
    const client = await connectSandboxd({ ...sandboxd, maxOutputBytes: 2 ** 50 });
    const r = await client.exec('yes');
    expect(r.stdout.length).toBe(MAX_OUTPUT_BYTES);
    expect(r.truncated).toBe(true);
    client.close();
    // No honest limit is cut: the most a node allows by default is within the cap.
    expect(DOCKER_DEFAULT_MAXIMA.maxOutputBytes).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
  });

  it('a lost stream fails pending calls with SANDBOX_UNAVAILABLE', async () => {
    const { client, toHost } = await fake(() => {});
    const pending = client.fs.readFile('x');
    toHost.destroy(new Error('attach stream reset'));
    expect(await codeOf(pending)).toBe('SANDBOX_UNAVAILABLE');
    await expectDead(client, 'SANDBOX_UNAVAILABLE');
  });

  it('a sandboxd that never answers: hello and calls time out with SANDBOX_UNAVAILABLE', async () => {
    const silent = new PassThrough();
    await expect(
      connectSandboxd({ input: silent, output: new PassThrough(), root: ROOT, timeoutMs: 200 }),
    ).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    const { client } = await fake(() => {});
    const started = Date.now();
    expect(await codeOf(client.fs.stat('a'))).toBe('SANDBOX_UNAVAILABLE');
    // The call's 2 s timeout under test: it failed at its deadline, not before (a lower bound).
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
  });

  it('streams that are already closed are refused at once', async () => {
    const ended = new PassThrough();
    ended.end();
    ended.resume();
    await new Promise((r) => ended.once('end', r));
    await expect(
      connectSandboxd({ input: ended, output: new PassThrough(), root: ROOT }),
    ).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
  });

  it('a wrong protocol version or root is refused', async () => {
    for (const hello of [
      { v: 2, root: ROOT },
      { v: 1, root: '/' },
    ]) {
      const toHost = new PassThrough();
      const fromHost = new PassThrough();
      const first = new Promise<Buffer>((r) => fromHost.once('data', r));
      const connecting = connectSandboxd({ input: toHost, output: fromHost, root: ROOT, timeoutMs: 2000 });
      // The session id is random: read it from the hello frame the client sent.
      const sent = await first;
      const session = JSON.parse(sent.subarray(RESYNC_MARKER.length + 4).toString()).session;
      toHost.write(
        Buffer.concat([RESYNC_MARKER, encodeFrame({ t: 'hello', session, pid: 1, node: 'x', ...hello })]),
      );
      await expect(connecting).rejects.toMatchObject({ code: 'SANDBOX_PROTOCOL' });
    }
  });
});
