// A crash in the middle of a call, with the real service in a process of its own: `kill -9` while a
// `bash sleep 20` runs, a restart on the same data directory, and the log is whole again: the call
// has exactly one result (INTERRUPTED), the seqs have no gap, and the agent's next call works.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import type { TestDatabase } from '../../helpers/postgres.ts';
import { startServeProcess } from '../../helpers/serve-process.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { readSse } from '../../unit/api/sse.ts';
import { dockerFixture } from '../sandbox/fixtures.ts';
import { storeDatabase } from '../store-mode.ts';

const CHILD = fileURLToPath(new URL('./serve-child.ts', import.meta.url));

const fixture = dockerFixture();
const dataDir = mkdtempSync(join(tmpdir(), 'dsh-api-crash-'));
const children: ChildProcess[] = [];
let database: TestDatabase | undefined;

afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(children.map(exited));
  await fixture.sweep();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));

/** Starts the service as a child process; resolves once it serves, with what it printed. */
async function startChild(): Promise<{ child: ChildProcess; url: string; lines: string[] }> {
  const options = {
    dataDir,
    runId: fixture.runId,
    ...(database === undefined ? {} : { database: database.url }),
  };
  const started = startServeProcess(CHILD, options, 'the service');
  started.catch((error: { child?: ChildProcess }) => error.child && children.push(error.child));
  const running = await started;
  children.push(running.child);
  return running;
}

const request = async (url: string, key: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Loose };
};

it('ends a call that a kill -9 interrupted with one INTERRUPTED result, and the agent goes on', async () => {
  database = await storeDatabase();
  const first = await startChild();
  expect(first.lines).toContain(`store ${database === undefined ? 'libsql' : 'postgres'}`);
  const key = readFileSync(join(dataDir, 'default-tenant.key'), 'utf8').trim();
  const agent = (await request(first.url, key, 'POST', '/v1/agents', {})).json;
  expect(agent.id).toEqual(expect.any(String));

  // The stream tells an event only once it is durable: then the kill cannot take the call back.
  const stream = await fetch(`${first.url}/v1/agents/${agent.id}/events`, {
    headers: { Authorization: `Bearer ${key}`, Accept: 'text/event-stream' },
  });
  const logged = readSse(stream.body as ReadableStream<Uint8Array>, (messages) =>
    messages.some((m) => m.data?.type === 'tool.call' && m.data?.callId === 'sleep'),
  );
  const batch = request(first.url, key, 'POST', `/v1/agents/${agent.id}/calls`, {
    calls: [{ id: 'sleep', name: 'bash', arguments: { command: 'sleep 20', description: 'sleep' } }],
  }).catch((error: unknown) => error);
  await logged;
  first.child.kill('SIGKILL');
  await exited(first.child);
  expect(await batch).toBeInstanceOf(Error); // the connection died with the process

  const second = await startChild();
  const events = (await request(second.url, key, 'GET', `/v1/agents/${agent.id}/events?limit=5000`)).json
    .events as Loose[];
  // At start on libsql; on PostgreSQL (a replica) when the agent's family is taken back, before
  // the first request about it is answered. Either way before the log above was read.
  expect(second.lines.some((line) => line.endsWith('repaired 1 interrupted calls in 1 sessions'))).toBe(true);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  const results = events.filter((e) => e.type === 'tool.result' && e.callId === 'sleep');
  expect(results).toHaveLength(1);
  expect(results[0]?.data).toMatchObject({
    name: 'bash',
    ok: false,
    error: { code: 'INTERRUPTED' },
  });

  const [next] = (
    await request(second.url, key, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 'next', name: 'bash', arguments: { command: 'echo still here', description: 'echo' } }],
    })
  ).json.results;
  expect(next).toMatchObject({ ok: true });
  expect(JSON.stringify(next.content)).toContain('still here');
  const after = (await request(second.url, key, 'GET', `/v1/agents/${agent.id}/events?limit=5000`)).json
    .events as Loose[];
  expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => i + 1));
  expect(after.filter((e) => e.type === 'tool.result').map((e) => [e.callId, e.data.ok])).toEqual([
    ['sleep', false],
    ['next', true],
  ]);

  second.child.kill('SIGTERM');
  await exited(second.child);
});
