// Round five of the adversarial pass, through the public HTTP API of a real service on 127.0.0.1
// (real Docker, real isolates, a libsql file store). Its focus was capacity that several tenants
// share; most findings are unit tests beside their code (tests/unit/security/shared-capacity.test.ts,
// tests/unit/isolates/owners-share.test.ts, tests/unit/api/mcp-resume.test.ts,
// tests/unit/api/idempotency.test.ts, tests/unit/api/empty-bodies.test.ts,
// tests/unit/security/mcp-batches.test.ts); here each is checked end to end where the service wires it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heldGet } from '../../helpers/held-get.ts';
import { type Harness, type Loose, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  // Connections scaled down (24 in all, 4 a tenant) and kept alive for the whole file.
  h = await startHarness({
    config: { maxConnections: 24, connectionReserve: 4, tenantConnections: 4, keepAliveTimeoutMs: 120_000 },
  });
});
afterAll(() => h?.close());

/** The JSON-RPC messages of an MCP answer, whether JSON or SSE. */
const messagesOf = async (res: Response): Promise<Loose[]> => {
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream'))
    return [...text.matchAll(/^data: (\{.*\})$/gm)].map((m) => JSON.parse(m[1] ?? 'null'));
  return [JSON.parse(text)].flat();
};

describe('a 2025-03-26 JSON-RPC batch on the real service', () => {
  it('answers an item with invalid params -32602 and still runs the others through the sandbox', async () => {
    const agent = await h.agent(h.keyA, { preset: 'standard' });
    const res = await fetch(`${h.server.url}/v1/agents/${agent}/mcp`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${h.keyA}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2025-03-26',
      },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 5 } },
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'bash', arguments: { command: 'echo from-the-sandbox', description: 'probe' } },
        },
      ]),
    });
    expect(res.status).toBe(200);
    const byId = new Map((await messagesOf(res)).map((m) => [m.id, m]));
    expect(byId.get(1)?.error?.code).toBe(-32602);
    expect(byId.get(1)?.error?.message).toContain('params.cursor');
    expect(JSON.stringify(byId.get(2)?.result)).toContain('from-the-sandbox');
  });
});

describe('POSTs that take no options on the real service', () => {
  it('refuse a body with fields before doing anything', async () => {
    const agent = await h.agent(h.keyA, { preset: 'standard' });
    for (const route of ['snapshots', 'steps', 'mailbox/take', 'resume']) {
      const res = await h.http(h.keyA, 'POST', `/v1/agents/${agent}/${route}`, { name: 'mine' });
      expect([route, res.status, res.json?.error?.code]).toEqual([route, 400, 'BAD_REQUEST']);
    }
    expect((await h.http(h.keyA, 'GET', `/v1/agents/${agent}/snapshots`)).json.snapshots).toEqual([]);
  });
});

/** GET /v1/agents with `key` on a keep-alive connection of its own, left open. */
const held = (key: string) => heldGet(`${h.server.url}/v1/agents`, { Authorization: `Bearer ${key}` });

describe('connections every one of which a tenant holds', () => {
  it("leave a further tenant its connection: the biggest holder's oldest idle one gives way", async () => {
    const tenants = await Promise.all(
      Array.from({ length: 6 }, (_, i) => h.server.store.tenants.createTenant(`holder-${i}`)),
    );
    // Six tenants at their four: the 24 the service has (with the file's own connections, more).
    const statuses: (number | string)[] = [];
    for (const t of tenants) for (let i = 0; i < 4; i++) statuses.push(await held(t.apiKey));
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(20);
    const late = await h.server.store.tenants.createTenant('late');
    expect(await held(late.apiKey)).toBe(200);
  });
});
