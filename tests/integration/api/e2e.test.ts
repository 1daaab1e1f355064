// The control plane end to end: real HTTP on 127.0.0.1, the real Docker engine (one container per
// agent, labelled for this run and swept afterwards) and the real isolate host for run_code.
import { Readable } from 'node:stream';
import { extract, pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse } from '../../unit/api/sse.ts';
import { type Harness, type Loose, startHarness, text } from '../security/harness.ts';

let h: Harness;
const http: Harness['http'] = (...args) => h.http(...args);
const calls: Harness['calls'] = (...args) => h.calls(...args);

const pendingOf = async (agentId: string) => {
  for (let i = 0; i < 500; i++) {
    const res = await http(h.keyA, 'GET', `/v1/agents/${agentId}/requests?state=pending`);
    if (res.json.requests.length > 0) return res.json.requests[0];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no pending request');
};

beforeAll(async () => {
  h = await startHarness({ isolateWorkers: 1 });
});

afterAll(() => h?.close());

describe('control plane over HTTP with Docker and isolates', () => {
  let agentId: string;

  it('creates an agent and works on its files through calls', async () => {
    const created = await http(h.keyA, 'POST', '/v1/agents', { preset: 'standard' });
    expect(created.status).toBe(201);
    agentId = created.json.id;
    const results = await calls(h.keyA, agentId, [
      ['w', 'write', { file_path: 'src/app.ts', content: 'const port = 3000\nexport { port }\n' }],
      [
        'e',
        'edit',
        { file_path: 'src/app.ts', old_string: 'const port = 3000', new_string: 'const port = 8080' },
      ],
      ['r', 'read', { file_path: 'src/app.ts' }],
      ['g', 'grep', { pattern: 'port = 8080' }],
      ['b', 'bash', { command: 'cat src/app.ts | wc -l; id -un', description: 'count lines' }],
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, true, true, true, true]);
    expect(text(results[2])).toContain('const port = 8080');
    expect(text(results[3])).toContain('src/app.ts');
    expect(text(results[4])).toBe('2\nagent');
  });

  it('moves files in and out as raw bytes and as tar', async () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    expect(
      (
        await http(h.keyA, 'PUT', `/v1/agents/${agentId}/files?path=bin/blob`, bytes, {
          'Content-Type': 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    const back = await http(h.keyA, 'GET', `/v1/agents/${agentId}/files?path=bin/blob`);
    expect([...back.buf]).toEqual([...bytes]);

    const tar = pack();
    tar.entry({ name: 'docs/readme.md' }, '# hello\n');
    tar.entry({ name: 'docs/notes.txt' }, 'notes\n');
    tar.finalize();
    const chunks: Buffer[] = [];
    for await (const chunk of tar) chunks.push(chunk as Buffer);
    const up = await http(
      h.keyA,
      'PUT',
      `/v1/agents/${agentId}/archive?path=imported`,
      new Uint8Array(Buffer.concat(chunks)),
      { 'Content-Type': 'application/x-tar' },
    );
    expect(up.status, up.text).toBe(200);
    expect(up.json.files).toBe(2);
    const [ls] = await calls(h.keyA, agentId, [
      ['ls', 'bash', { command: 'cat imported/docs/readme.md', description: 'read' }],
    ]);
    expect(text(ls)).toBe('# hello');

    const down = await http(h.keyA, 'GET', `/v1/agents/${agentId}/archive?path=imported`);
    expect(down.status).toBe(200);
    const names: string[] = [];
    const ex = extract();
    ex.on('entry', (header, stream, next) => {
      names.push(header.name);
      stream.resume();
      stream.on('end', next);
    });
    await new Promise<void>((resolve, reject) => {
      ex.on('finish', resolve);
      ex.on('error', reject);
      Readable.from([Buffer.from(down.buf)]).pipe(ex);
    });
    expect(names.some((n) => n.endsWith('docs/readme.md'))).toBe(true);
    const outside = await http(
      h.keyA,
      'GET',
      `/v1/agents/${agentId}/files?path=${encodeURIComponent('../../etc/passwd')}`,
    );
    expect(outside.status).toBe(400);
  });

  it('run_code calls several tools concurrently in one program', async () => {
    const created = await http(h.keyA, 'POST', '/v1/agents', { preset: 'code' });
    const codeAgent = created.json.id;
    const tools = await http(h.keyA, 'GET', `/v1/agents/${codeAgent}/tools`);
    expect(tools.json.tools.map((t: Loose) => t.name)).toEqual(['run_code']);
    expect(tools.json.tools[0].description).toContain('declare const tools');
    const code = `
      await Promise.all([1, 2, 3].map((i) => tools.write({ file_path: 'f' + i + '.txt', content: 'file ' + i })));
      const [a, b, found] = await Promise.all([tools.read({ file_path: 'f1.txt' }), tools.read({ file_path: 'f2.txt' }), tools.glob({ pattern: 'f*.txt' })]);
      console.log(typeof a === 'string' ? a : JSON.stringify(a));
      return found;`;
    const [result] = await calls(h.keyA, codeAgent, [
      ['p', 'run_code', { code, description: 'write and read files' }],
    ]);
    expect(result.ok, text(result)).toBe(true);
    expect(text(result)).toContain('file 1');
    expect(text(result)).toContain('f3.txt');
    const native = await calls(h.keyA, codeAgent, [['n', 'read', { file_path: 'f1.txt' }]]);
    expect(native[0].error.code).toBe('UNKNOWN_TOOL');
    const events = await http(h.keyA, 'GET', `/v1/agents/${codeAgent}/events`);
    const inner = events.json.events.filter((e: Loose) => e.parentCallId === 'p' && e.type === 'tool.call');
    expect(inner.map((e: Loose) => e.data.name).sort()).toEqual([
      'glob',
      'read',
      'read',
      'write',
      'write',
      'write',
    ]);
  });

  it('a remote tool is answered by the client', async () => {
    const reg = await http(h.keyA, 'POST', `/v1/agents/${agentId}/remote-tools`, {
      tools: [
        {
          name: 'ask_weather',
          description: 'Weather from the client',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    });
    expect(reg.json.tools).toEqual(['ask_weather']);
    const pending = calls(h.keyA, agentId, [['rw', 'ask_weather', { city: 'Oslo' }]]);
    const request = await pendingOf(agentId);
    expect(request).toMatchObject({
      kind: 'remote_tool',
      payload: { toolName: 'ask_weather', arguments: { city: 'Oslo' } },
    });
    expect(
      (await http(h.keyA, 'POST', `/v1/agents/${agentId}/requests/${request.id}`, { result: { tempC: -3 } }))
        .status,
    ).toBe(200);
    const [result] = await pending;
    expect(result).toMatchObject({ ok: true, value: { tempC: -3 } });
  });

  it('ask: one call allowed, another denied', async () => {
    const created = await http(h.keyA, 'POST', '/v1/agents', { policy: { ask: ['bash'] } });
    const asking = created.json.id;
    const first = calls(h.keyA, asking, [
      ['b1', 'bash', { command: 'echo allowed', description: 'allowed' }],
    ]);
    const r1 = await pendingOf(asking);
    expect(r1).toMatchObject({ kind: 'approval', callId: 'b1' });
    await http(h.keyA, 'POST', `/v1/agents/${asking}/requests/${r1.id}`, { allow: true });
    expect(text((await first)[0])).toBe('allowed');
    const second = calls(h.keyA, asking, [
      ['b2', 'bash', { command: 'touch /workspace/denied', description: 'denied' }],
    ]);
    const r2 = await pendingOf(asking);
    await http(h.keyA, 'POST', `/v1/agents/${asking}/requests/${r2.id}`, {
      allow: false,
      reason: 'no writes',
    });
    const [denied] = await second;
    expect(denied).toMatchObject({ ok: false, error: { code: 'DENIED' } });
    const [check] = await calls(h.keyA, asking, [['c', 'glob', { pattern: 'denied' }]]);
    expect(text(check)).not.toContain('denied');
  });

  it('replays events after a reconnect with Last-Event-ID, without gaps or repeats', async () => {
    const first = await fetch(`${h.server.url}/v1/agents/${agentId}/events`, {
      headers: { Authorization: `Bearer ${h.keyA}`, Accept: 'text/event-stream' },
    });
    const seen = await readSse(first.body as ReadableStream<Uint8Array>, (m) => m.length >= 4);
    const lastId = seen.at(-1)?.id as string;
    await calls(h.keyA, agentId, [['after', 'read', { file_path: 'src/app.ts' }]]);
    const again = await fetch(`${h.server.url}/v1/agents/${agentId}/events`, {
      headers: { Authorization: `Bearer ${h.keyA}`, Accept: 'text/event-stream', 'Last-Event-ID': lastId },
    });
    const page = await http(h.keyA, 'GET', `/v1/agents/${agentId}/events?limit=5000`);
    const total = page.json.events.length;
    const rest = await readSse(
      again.body as ReadableStream<Uint8Array>,
      (m) => Number(m.at(-1)?.id) >= total,
    );
    const ids = [...seen, ...rest].map((m) => Number(m.id));
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(rest.at(-1)?.data).toMatchObject({ type: 'tool.result', callId: 'after' });
  });

  it("a second tenant cannot see or touch the first one's agent", async () => {
    expect((await http(h.keyB, 'GET', `/v1/agents/${agentId}`)).status).toBe(404);
    expect((await http(h.keyB, 'GET', `/v1/agents/${agentId}/files?path=src/app.ts`)).status).toBe(404);
    expect(
      (
        await http(h.keyB, 'POST', `/v1/agents/${agentId}/calls`, {
          calls: [{ id: 'x', name: 'bash', arguments: { command: 'ls', description: 'x' } }],
        })
      ).status,
    ).toBe(404);
    expect((await http(h.keyB, 'GET', '/v1/agents')).json.agents).toEqual([]);
  });

  it('deleting an agent removes its container', async () => {
    expect((await http(h.keyA, 'DELETE', `/v1/agents/${agentId}`)).status).toBe(204);
    const containers = await h.fixture.docker.listContainers({
      all: true,
      filters: { label: [`dsh.test=${h.fixture.runId}`] },
    });
    expect(containers.map((c) => c.Names.join(',')).join(' ')).not.toContain(agentId);
  });
});
