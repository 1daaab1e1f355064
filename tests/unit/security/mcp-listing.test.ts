// A lying stdio MCP server (issue 28): one that answers tools/list with page after page of 20,000
// invalid tools cost the control plane 14-29 s to register under load, held /v1/health for up to
// 3.9 s and made the server's GET answer 40.9 MB naming 319,993 skipped tools. A listing is now
// bounded (pages, tools, bytes, the start's deadline), its tools are checked in slices that yield
// to the event loop, and skipped tools are a count plus the first 20 with the reason.
// The servers run on pipes of a real (local) sandboxd, as in tests/unit/api/mcp-servers.test.ts.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpRunner } from '../../../host/mcp-servers/runner.ts';
import { DEFAULT_MCP_LIMITS, type McpLimits } from '../../../host/mcp-servers/types.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { Sandbox, SandboxProvider } from '../../../host/sandbox/types.ts';
import { type Api, makeApi } from '../api/harness.ts';
import { inProcessMcpServer } from '../mcp-servers/in-process-server.ts';
import { type LocalSandboxd, startLocalSandboxd } from '../sandboxd/harness.ts';

const LIAR = join(import.meta.dirname, '..', '..', 'fixtures', 'mcp', 'lying-server.mjs');
const liar = (...args: string[]) => ({ name: 'liar', command: [process.execPath, LIAR, ...args] });

/** Limits roomy enough that a whole page of 20,000 tools is read and checked. */
const ROOMY: Partial<McpLimits> = {
  maxListedTools: 100_000,
  maxListBytes: 64 * 1024 * 1024,
  maxResultBytes: 8 * 1024 * 1024,
};

let sd: LocalSandboxd;
let api: Api;
const limitsByTenant = new Map<string, Partial<McpLimits>>();

beforeAll(async () => {
  sd = await startLocalSandboxd();
  const client = await sd.connect();
  const memory = createMemoryProvider();
  const withStdio = <T extends object>(s: T | undefined) => s && { ...s, stdio: client.stdio };
  const sandboxes: SandboxProvider = {
    ...memory,
    flags: { ...memory.flags, stdio: true },
    create: async (spec) => withStdio(await memory.create(spec)) as never,
    get: async (id) => withStdio(await memory.get(id)),
  };
  api = await makeApi({}, { sandboxes, agents: { mcpLimitsOf: (tenantId) => limitsByTenant.get(tenantId) } });
});

afterAll(async () => {
  await api?.close();
  await sd?.stop();
});

/** A tenant of its own with these MCP limits, and an agent of it. */
const agentWith = async (limits: Partial<McpLimits>) => {
  const tenant = await api.store.tenants.createTenant(`t-${limitsByTenant.size}`);
  limitsByTenant.set(tenant.id, limits);
  return { key: tenant.apiKey, agent: await api.createAgent(tenant.apiKey) };
};

/**
 * Registers the server while asking /v1/health again and again, a new request each turn of the event
 * loop (as requests arriving over the network would); the health answers that came meanwhile.
 */
const registerWhileProbing = async (key: string, agentId: string, body: unknown) => {
  let registering = true;
  const health: number[] = [];
  const probe = (async () => {
    while (registering) {
      health.push((await api.request(undefined, 'GET', '/v1/health')).status);
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  const res = await api.request(key, 'POST', `/v1/agents/${agentId}/mcp-servers`, body);
  registering = false;
  await probe;
  return { res, health };
};

describe('a lying stdio MCP server', () => {
  it('is registered within the bounds: its one valid tool kept, 20,000 skipped as a count and 20 notes, the GET small', async () => {
    const { key, agent } = await agentWith({});
    // Endless pages of 20,000 tools that are not valid MCP (echo, first, is valid).
    const { res, health } = await registerWhileProbing(key, agent.id, liar());
    expect(res.status).toBe(201);
    expect(res.json.tools).toEqual([{ name: 'mcp__liar__echo', tool: 'echo' }]);
    expect(res.json.skippedCount).toBe(20_000);
    expect(res.json.skipped).toHaveLength(20);
    expect(res.json.skipped[0]).toEqual({
      tool: 'x0-0',
      reason: expect.stringContaining('not a valid MCP tool (inputSchema.type'),
    });
    expect(res.json.incomplete).toBe(
      `the server listed more than ${DEFAULT_MCP_LIMITS.maxListedTools} tools`,
    );
    // The control plane answered others meanwhile.
    expect(health.length).toBeGreaterThan(0);
    expect(health.every((s) => s === 200)).toBe(true);

    const got = await api.request(key, 'GET', `/v1/agents/${agent.id}/mcp-servers/liar`);
    expect(got.text.length).toBeLessThan(16 * 1024);
    expect(got.json).toMatchObject({ state: 'ready', skippedCount: 20_000 });
    const echo = (await api.call(key, agent.id, [{ id: 'c', name: 'mcp__liar__echo', arguments: {} }])).json;
    expect(echo.results[0]).toMatchObject({ ok: true, content: [{ type: 'text', text: 'called echo' }] });
  });

  it('stops at the page bound: endless small pages of valid tools give 64 tools and the rest counted', async () => {
    const { key, agent } = await agentWith({});
    const res = await api.request(
      key,
      'POST',
      `/v1/agents/${agent.id}/mcp-servers`,
      liar('--valid', '--per-page', '50'),
    );
    expect(res.status).toBe(201);
    expect(res.json.tools).toHaveLength(64);
    // 16 pages of 50, and echo.
    expect(res.json.skippedCount).toBe(16 * 50 + 1 - 64);
    expect(res.json.skipped[0]).toEqual({ tool: 't1-13', reason: 'over 64 tools' });
    expect(res.json.incomplete).toBe('the server announced more than 16 pages of tools');
  });

  it('stops at the byte bound, and at the start’s deadline keeping the pages read before it', async () => {
    const bytes = await agentWith({ ...ROOMY, maxListBytes: 100_000 });
    const big = await api.request(
      bytes.key,
      'POST',
      `/v1/agents/${bytes.agent.id}/mcp-servers`,
      liar('--valid', '--per-page', '2000'),
    );
    expect(big.status).toBe(201);
    expect(big.json.tools).toHaveLength(64);
    expect(big.json.incomplete).toBe("the server's tools came to more than 100000 bytes");
    // Two pages of 2,000 and echo: 64 taken, the rest skipped (checked or, past the bound, unread).
    expect(big.json.skippedCount).toBe(2 * 2000 + 1 - 64);
    expect(big.json.skipped[19]).toEqual({ tool: 't0-82', reason: 'over 64 tools' });

    // The first page comes at once, the second never: the listing ends at the deadline with page one.
    const slow = await agentWith({ startTimeoutMs: 4000 });
    const stalled = await api.request(
      slow.key,
      'POST',
      `/v1/agents/${slow.agent.id}/mcp-servers`,
      liar('--valid', '--per-page', '10', '--stall-after', '1'),
    );
    expect(stalled.status).toBe(201);
    expect(stalled.json.tools).toHaveLength(11);
    expect(stalled.json.incomplete).toBe('listing its tools took longer than 4000 ms');
  });

  it('a listing within roomy bounds is checked in slices: health keeps answering during 3 pages of 20,000', async () => {
    const { key, agent } = await agentWith(ROOMY);
    const { res, health } = await registerWhileProbing(key, agent.id, liar('--pages', '3'));
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ skippedCount: 60_000, tools: [{ name: 'mcp__liar__echo' }] });
    expect(res.json.incomplete).toBeUndefined();
    expect(health.length).toBeGreaterThanOrEqual(10);
    expect(health.every((s) => s === 200)).toBe(true);
  });
});

describe('checking a listing', () => {
  /**
   * A stdio server in this process that answers at once, in whole messages (a microtask, no timer,
   * no I/O): the start takes no turn of the event loop of its own, so every turn while it runs is
   * one the listing gave back.
   */
  const inProcessServer = (page: unknown) => inProcessMcpServer({ name: 'inproc', page });

  it('yields to the event loop while it checks one page of 20,000 tools, never holding it for the whole page', async () => {
    const tools = Array.from({ length: 20_000 }, (_, i) => ({
      name: `x${i}`,
      inputSchema: { type: 'array' },
    }));
    const sandbox = { stdio: inProcessServer({ tools }) } as unknown as Sandbox;
    const runner = createMcpRunner({
      spec: { name: 'inproc', transport: 'stdio', command: ['x'] },
      limits: { ...DEFAULT_MCP_LIMITS, ...ROOMY },
      sandbox: async () => sandbox,
    });
    // Turns of the event loop while the start runs, each a moment another request could be served:
    // an immediate that queues the next one runs once per turn.
    let turns = 0;
    let starting = true;
    const tick = () => {
      turns++;
      if (starting) setImmediate(tick);
    };
    setImmediate(tick);
    try {
      await runner.start();
    } finally {
      starting = false;
      runner.stop();
    }
    // 20,000 tools, 256 per slice: 78 yields. Checked in one go, the page would take one turn.
    expect(turns).toBeGreaterThanOrEqual(70);
    expect(runner.listing().skipped.count).toBe(20_000);
    expect(runner.listing().skipped.first).toHaveLength(20);
  });
});
