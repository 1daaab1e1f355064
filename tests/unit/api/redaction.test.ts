// Redaction (issue 17 §1): a post-execute policy that replaces a result's content leaves no raw
// value anywhere it is stored or served: not in POST /calls (JSON and SSE), not in GET /events, not
// in the MCP endpoint's tools/call, not
// in any table of the store (events, payloads) nor in the full-text index. The call's own in-memory
// consumer still reads the value (seed: canonical values belong to execution).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Row } from '../../../host/store/db.ts';
import { type Api, makeApi } from './harness.ts';
import { readSse } from './sse.ts';

const SECRET = 'TOPSECRET';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
  api.registry.global.on('tools/post-execute', (_call, outcome) =>
    outcome.ok && JSON.stringify(outcome.value).includes(SECRET)
      ? { kind: 'replace', content: [{ type: 'text', text: '[redacted]' }] }
      : undefined,
  );
});
afterEach(async () => {
  await api.close();
});

/** Every text or blob cell of every table of the store that mentions the secret. */
const storeMentions = (): string[] => {
  const db = api.store.db;
  const tables = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
    .all() as Row[];
  const found: string[] = [];
  for (const { name } of tables) {
    const rows = db.prepare(`SELECT * FROM "${String(name)}"`).all() as Row[];
    for (const row of rows) {
      for (const [column, cell] of Object.entries(row)) {
        const text =
          typeof cell === 'string'
            ? cell
            : cell instanceof Uint8Array
              ? Buffer.from(cell).toString('latin1')
              : '';
        if (text.toLowerCase().includes(SECRET.toLowerCase())) found.push(`${String(name)}.${column}`);
      }
    }
  }
  const indexed = db.prepare('SELECT rowid FROM events_fts WHERE events_fts MATCH ?').all(SECRET) as Row[];
  if (indexed.length > 0) found.push('events_fts');
  return found;
};

const upload = async (agentId: string, path: string, text: string) => {
  const res = await api.request(api.keyA, 'PUT', `/v1/agents/${agentId}/files?path=${path}`, text, {
    'Content-Type': 'application/octet-stream',
  });
  expect(res.status).toBe(200);
};

describe('a redacting policy', () => {
  it('leaves no raw value in the API response, the events or the store, small or large', async () => {
    const agent = await api.createAgent(api.keyA);
    await upload(agent.id, 'small.txt', `key=${SECRET}\n`);
    // Large enough to be stored apart as a deduplicated payload if it were stored at all.
    await upload(agent.id, 'large.txt', `${`${SECRET} `.repeat(8000)}\n`);
    const calls = [
      { id: 's', name: 'read', arguments: { file_path: 'small.txt' } },
      { id: 'l', name: 'read', arguments: { file_path: 'large.txt' } },
    ];
    const res = await api.call(api.keyA, agent.id, calls);
    expect(res.status).toBe(200);
    expect(res.json.results).toMatchObject([
      { id: 's', ok: true, content: [{ type: 'text', text: '[redacted]' }], redacted: true },
      { id: 'l', ok: true, content: [{ type: 'text', text: '[redacted]' }], redacted: true },
    ]);
    expect(res.text).not.toContain(SECRET);

    const stream = await api.callStream(
      api.keyA,
      agent.id,
      calls.map((c) => ({ ...c, id: `${c.id}2` })),
    );
    const messages = await readSse(stream.body as ReadableStream<Uint8Array>);
    expect(messages.at(-1)?.event).toBe('results');
    expect(JSON.stringify(messages)).not.toContain(SECRET);

    await api.store.events.flush();
    const events = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`);
    expect(events.status).toBe(200);
    const results = events.json.events.filter((e: { type: string }) => e.type === 'tool.result');
    expect(results).toHaveLength(4);
    for (const event of results) expect(event.data).toMatchObject({ ok: true, redacted: true });
    expect(events.text).not.toContain(SECRET);
    expect(storeMentions()).toEqual([]);
  });

  it('leaves no raw value in what the MCP endpoint answers', async () => {
    const agent = await api.createAgent(api.keyA);
    await upload(agent.id, 'small.txt', `key=${SECRET}\n`);
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
    });
    const client = new Client({ name: 'redaction-probe', version: '1.0.0' });
    try {
      const port = (server.address() as AddressInfo).port;
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/v1/agents/${agent.id}/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${api.keyA}` } },
        }),
      );
      const result = await client.callTool({ name: 'read', arguments: { file_path: 'small.txt' } });
      expect(result.content).toEqual([{ type: 'text', text: '[redacted]' }]);
      expect(JSON.stringify(result)).not.toContain(SECRET);
    } finally {
      await client.close().catch(() => undefined);
      (server as Server).closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
