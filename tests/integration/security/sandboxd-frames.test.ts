// Frames forged from inside a sandbox, through the public API. sandboxd's stdout is the control
// plane's RPC channel; anything in the container that can write to it (sandboxd itself once
// compromised, or an agent process able to open /proc/<sandboxd>/fd/1) can send the host garbage,
// forged answers and forged hellos. Guarantee: whatever arrives, the control plane holds at most one
// attach socket per sandbox (a broken connection's socket is closed, not leaked), and the agent's
// next call still works.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Harness, startHarness, text } from './harness.ts';

const run = promisify(execFile);
let h: Harness;
let agent: string;

/** Unix-domain sockets this process holds open: the connections to the Docker engine (plus a constant few). */
const unixSockets = (): number => {
  const unix = new Set(
    readFileSync('/proc/net/unix', 'utf8')
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/)[6])
      .filter((x): x is string => x !== undefined),
  );
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m && unix.has(m[1] as string)) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
};

/** The baseline: sockets close asynchronously, so the lowest of a few samples. */
const settle = async (): Promise<number> => {
  let low = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 100));
    low = Math.min(low, unixSockets());
  }
  return low;
};

const containerOf = async (): Promise<string> => {
  const { stdout } = await run('docker', [
    'ps',
    '-q',
    '--filter',
    `label=dsh.agent=${agent}`,
    '--filter',
    `label=dsh.test=${h.fixture.runId}`,
  ]);
  const id = stdout.trim().split('\n')[0];
  if (!id) throw new Error('agent container not found');
  return id;
};

/**
 * Writes `payload` into the container's stdout (the attach stream sandboxd answers on) through its
 * init process's fd 1, from the host as root: whatever identity sandboxd runs under, this is what
 * anything in the container that gets at that pipe (sandboxd itself, once compromised) can send.
 */
const forge = (initPid: string, payload: Buffer): void => {
  writeFileSync(`/proc/${initPid}/fd/1`, payload);
};

const frame = (json: string): Buffer => {
  const body = Buffer.from(json);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
};
const RESYNC = Buffer.alloc(8, 0xff);

beforeAll(async () => {
  h = await startHarness();
  agent = await h.agent(h.keyA, { preset: 'standard' });
  expect(text(await h.bash(h.keyA, agent, 'echo ready'))).toBe('ready');
});

afterAll(async () => {
  await h?.close();
});

describe('frames forged inside a sandbox', () => {
  it('garbage, forged hellos and forged answers leave no extra socket to the engine', async () => {
    const container = await containerOf();
    const initPid = (await run('docker', ['inspect', '-f', '{{.State.Pid}}', container])).stdout.trim();
    const before = await settle();
    const payloads = [
      Buffer.from('garbage that is not a frame\n'), // not a frame at all
      frame('not json'), // a frame that is not JSON
      frame('{"t":"res","id":"x"}'), // a frame that fails its schema
      Buffer.concat([
        RESYNC,
        frame('{"t":"hello","v":1,"session":"forged","pid":1,"root":"/workspace","node":"x"}'),
      ]), // another "client's" hello
      frame('{"t":"res","id":1,"ok":true,"value":{"bogus":true}}'), // a forged answer to a call that may be pending
      Buffer.from([0, 0, 0, 9, 123]), // a frame cut short: the next real answer lands inside it
    ];
    for (let i = 0; i < 60; i++) {
      forge(initPid, payloads[i % payloads.length] as Buffer);
      // A real call follows. It may die with the connection when the forged frame lands while it is
      // in flight (that is the agent hurting only itself); the one after it must work.
      const first = text(await h.bash(h.keyA, agent, `echo call-${i}`));
      if (first !== `call-${i}`) {
        expect(first).toMatch(/sandboxd broke the protocol|connection to sandboxd was lost|took over/);
        expect(text(await h.bash(h.keyA, agent, `echo again-${i}`))).toBe(`again-${i}`);
      }
    }
    // Sockets close asynchronously: wait for the count to come back (a leak never does).
    await until(() => unixSockets() - before <= 1, { what: 'the extra sockets to close', timeoutMs: 20_000 });
  });
});
