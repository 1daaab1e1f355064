// JSON-RPC batches on an agent's MCP endpoint (issue 28): one POST of a batch array put 100 calls
// in flight, where POST /calls caps a batch at 64, in revisions that have no batches at all. Batches
// exist only in MCP 2025-03-26 (removed in 2025-06-18); there they are capped like /calls, and in
// every other revision the endpoint refuses them with a JSON-RPC error. Real loopback HTTP.
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, type Loose, makeApi } from '../api/harness.ts';

let api: Api;
let server: ServerType;
let base = '';

beforeAll(async () => {
  api = await makeApi();
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await api.close();
});

/** POSTs `body` to the agent's MCP endpoint; the status and every JSON-RPC message of the answer. */
const post = async (agentId: string, body: unknown, version?: string) => {
  const res = await fetch(`${base}/v1/agents/${agentId}/mcp`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${api.keyA}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(version === undefined ? {} : { 'MCP-Protocol-Version': version }),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const messages: Loose[] = (res.headers.get('content-type') ?? '').includes('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data: ') && line.length > 6)
        .map((line) => JSON.parse(line.slice(6)))
    : [JSON.parse(text)];
  return { status: res.status, messages };
};

const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
const globCall = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'glob', arguments: { pattern: '*' } },
});

const toolCalls = async (agentId: string): Promise<number> =>
  ((await api.request(api.keyA, 'GET', `/v1/agents/${agentId}/events`)).json.events as Loose[]).filter(
    (e) => e.type === 'tool.call',
  ).length;

describe('JSON-RPC batches on the MCP endpoint', () => {
  it('are refused in the revisions without them (2025-06-18 on), and nothing of them runs', async () => {
    const agent = await api.createAgent(api.keyA);
    for (const version of ['2025-06-18', '2025-11-25', '2026-07-28']) {
      const res = await post(
        agent.id,
        [ping(1), ...Array.from({ length: 99 }, (_, i) => globCall(i + 2))],
        version,
      );
      expect(res.status, version).toBe(400);
      expect(res.messages).toEqual([
        {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: expect.stringContaining(`MCP ${version} has no JSON-RPC batches`) },
        },
      ]);
    }
    expect(await toolCalls(agent.id)).toBe(0);
    // A single message in the same revisions is served as ever.
    expect((await post(agent.id, ping(7), '2025-06-18')).messages).toEqual([
      { jsonrpc: '2.0', id: 7, result: {} },
    ]);
  });

  it('are served in 2025-03-26 (named, or assumed without the header) up to 64 messages, like POST /calls', async () => {
    const agent = await api.createAgent(api.keyA);
    for (const version of ['2025-03-26', undefined]) {
      const two = await post(agent.id, [ping(1), globCall(2)], version);
      expect(two.status).toBe(200);
      expect(two.messages.map((m) => m.id).sort()).toEqual([1, 2]);
      expect(two.messages.find((m) => m.id === 2)?.result?.isError).toBeFalsy();

      const over = await post(
        agent.id,
        Array.from({ length: 65 }, (_, i) => globCall(i + 1)),
        version,
      );
      expect(over.status).toBe(400);
      expect(over.messages[0].error).toEqual({
        code: -32600,
        message: expect.stringContaining('at most 64 messages'),
      });
    }
    // The two batches of two ran their one call each; the batches of 65 ran nothing.
    expect(await toolCalls(agent.id)).toBe(2);
  });

  it('answer an item with invalid params -32602 naming the field, like the same request alone', async () => {
    // Round 5 found: single requests were checked (-32602) but a batch's items went to the SDK
    // unchecked, which answered them -32603 Internal error with its validator's raw issue list.
    const agent = await api.createAgent(api.keyA);
    const res = await post(agent.id, [
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 5 } },
      ping(2),
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: { a: 1 } } },
      { jsonrpc: '2.0', id: 4, method: 'tools/list', params: {} },
    ]);
    expect(res.status).toBe(200);
    const byId = new Map((res.messages.flat() as Loose[]).map((m) => [m.id, m]));
    expect([...byId.keys()].sort()).toEqual([1, 2, 3, 4]);
    for (const id of [1, 3]) {
      expect(byId.get(id)?.error?.code, String(id)).toBe(-32602);
      expect(byId.get(id)?.error?.message).toContain('params.cursor');
    }
    expect(byId.get(2)?.result).toEqual({});
    expect(byId.get(4)?.result?.tools?.length).toBeGreaterThan(0);
    // A batch of nothing but invalid items is answered as a batch too, nothing run.
    const only = await post(agent.id, [
      { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { cursor: 5 } },
    ]);
    expect((only.messages.flat() as Loose[]).map((m) => [m.id, m.error?.code])).toEqual([[9, -32602]]);
  });

  it("count each of their calls against the tenant's running MCP answers, like single requests", async () => {
    // Round 5 found: a batch took one of the tenant's 64 running-answer places whatever it held, and
    // a 2025-era answer runs on after its client goes (its request slot given back), so a tenant
    // could keep 64 x 64 calls running through MCP where POST /calls holds 16 x 64.
    const agent = await api.createAgent(api.keyA);
    const reg = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/remote-tools`, {
      tools: [{ name: 'wait_for_me', description: 'Waits for the client.', parameters: { type: 'object' } }],
    });
    expect(reg.status, reg.text).toBe(200);
    const waiting = (from: number) =>
      Array.from({ length: 40 }, (_, i) => ({
        jsonrpc: '2.0',
        id: from + i,
        method: 'tools/call',
        params: { name: 'wait_for_me', arguments: {} },
      }));
    const open = async (from: number) => {
      const res = await fetch(`${base}/v1/agents/${agent.id}/mcp`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${api.keyA}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': '2025-03-26',
        },
        body: JSON.stringify(waiting(from)),
      });
      // The client goes; the calls run on, waiting for their answers.
      await res.body?.cancel();
      return res.status;
    };
    expect(await open(1)).toBe(200);
    // 40 calls running; 40 more would pass the 64.
    expect(await open(100)).toBe(429);
    // Deleting the agent ends its calls and gives the places back.
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
  });
});
