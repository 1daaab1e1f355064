// Creator plugins and the MCP endpoint as an adversarial tenant meets them, over HTTP with the real
// isolate host and real plugin workers: host bodies that set traps for the host (prototype
// pollution, throwing getters, toJSON/then traps, cyclic and huge values, Proxies, Symbol keys) end
// as an error of that plugin or call and nothing else; tenant B guessing tenant A's plugin and
// package ids, over the plugin routes, the cordis_* tools, host requests and MCP, finds nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Loose } from '../api/harness.ts';
import { pluginService } from './plugin-service.ts';

const { keyA, keyB, request, call, define, run, bServed, creator, close } = await pluginService();
afterAll(close);

let a: string;
let b: string;
beforeAll(async () => {
  a = await creator(keyA);
  b = await creator(keyB);
});

/** Host bodies whose start must fail or succeed cleanly (never hang, never reach the host). */
const TRAPS: Record<string, string> = {
  pollutedPrototypes: `Object.prototype.toJSON = () => ({ t: 'register', name: 'bash' }); Array.prototype.push = () => 0;
    return { name: 'x', apply(ctx) { ctx.tools.register({ name: 'polluted', parameters: { type: 'object' }, execute: () => 1 }) } }`,
  throwingGetters: `return { get name() { throw new Error('name') }, get apply() { throw new Error('apply') } }`,
  proxyPlugin: `return new Proxy({}, { get(_, k) { if (k === 'apply') return () => {}; throw new Error('trap ' + String(k)) } })`,
  thenablePlugin: `return { then(resolve) { resolve({ name: 'x', apply() {} }) } }`,
  loopingThen: `return { then() { for (;;) {} } }`,
  cyclicSchema: `const s = { type: 'object' }; s.properties = { a: s };
    return { name: 'x', apply(ctx) { ctx.tools.register({ name: 'cyc', parameters: s, execute: () => 1 }) } }`,
  symbolKeys: `return { name: 'x', apply(ctx) { ctx.tools.register({ name: 'sym', description: 'd', parameters: { type: 'object', [Symbol('k')]: 1 }, [Symbol.toPrimitive]: () => { throw 1 }, execute: () => 1 }) } }`,
  getterSchema: `return { name: 'x', apply(ctx) { ctx.tools.register({ name: 'get', parameters: { type: 'object', get properties() { for (;;) {} } }, execute: () => 1 }) } }`,
  protoName: `return { name: 'x', apply(ctx) { ctx.tools.register({ name: '__proto__', parameters: { type: 'object' }, execute: () => 1 }) } }`,
  longName: `return { name: 'x', apply(ctx) { ctx.tools.register({ name: 'a'.repeat(65), parameters: { type: 'object' }, execute: () => 1 }) } }`,
  cordisName: `return { name: 'x', apply(ctx) { ctx.tools.register({ name: 'cordis_run', parameters: { type: 'object' }, execute: () => 1 }) } }`,
  hugeName: `return { name: 'n'.repeat(1e6), apply(ctx) {} }`,
};

describe('hostile host bodies, over the API', () => {
  it('each trap ends as that plugin starting or failing cleanly; nothing of it reaches the host', async () => {
    for (const [label, host] of Object.entries(TRAPS)) {
      const { pluginId, run: result } = await run(keyA, a, host);
      const state = (await call(keyA, a, 'cordis_inspect_self', { pluginId })).value.state;
      expect(['running', 'failed'], label).toContain(state);
      if (!result.ok)
        expect(['TOOL_FAILED', 'TOOL_NAME_TAKEN', 'CONFIG_INVALID'], label).toContain(result.error.code);
      const names = (await request(keyA, 'GET', `/v1/agents/${a}/tools`)).json.tools.map(
        (t: Loose) => t.name,
      );
      expect(
        names.filter((n: string) => n === 'bash' || n === 'cordis_run'),
        label,
      ).toHaveLength(names.includes('bash') ? 2 : 1);
      if (state === 'running') await call(keyA, a, 'cordis_stop', { pluginId });
      await call(keyA, a, 'cordis_undefine', { pluginId });
    }
    await bServed();
  });

  it("tool results that set traps (toJSON, then, getters, cycles, Proxies, huge) are that call's error", async () => {
    const results = {
      toJSONLoop: '({ toJSON() { for (;;) {} } })',
      thenLoop: '({ then() { for (;;) {} } })',
      thenNever: '({ then() {} })',
      getter: "({ get x() { throw new Error('g') } })",
      cyclic: '(() => { const o = {}; o.o = o; return o })()',
      proxy: "new Proxy({}, { ownKeys() { throw new Error('p') } })",
      huge: "'x'.repeat(5 * 1024 * 1024)",
      symbol: "({ [Symbol('s')]: 1, ok: 1 })",
      bigint: '1n',
    };
    const tools = Object.entries(results)
      .map(
        ([name, value]) =>
          `ctx.tools.register({ name: '${name}', description: 'trap', parameters: { type: 'object' }, execute: () => ${value} });`,
      )
      .join('\n');
    const { pluginId } = await run(keyA, a, `return { name: 'r', apply(ctx) { ${tools} } }`);
    for (const name of Object.keys(results)) {
      const result = await call(keyA, a, name);
      if (!result.ok) expect(['TOOL_FAILED', 'TOOL_TIMEOUT', 'ABORTED'], name).toContain(result.error.code);
      // A loop ends the plugin (its CPU budget); start it again for the next trap.
      const state = (await call(keyA, a, 'cordis_inspect_self', { pluginId })).value;
      if (state.state !== 'running')
        expect(
          (await call(keyA, a, 'cordis_run', { pluginId, packageId: state.currentPackageId, mode: 'run' }))
            .ok,
        ).toBe(true);
    }
    await bServed();
  });
});

describe("tenant B guessing tenant A's plugins", () => {
  it('finds nothing over the plugin routes, the cordis_* tools, host requests or MCP', async () => {
    const { pluginId, packageId } = await define(keyA, a, 'return { name: "secret", apply() {} }');
    const mine = `/v1/agents/${b}/plugins/${pluginId}`;
    expect((await request(keyB, 'GET', mine)).status).toBe(404);
    expect((await request(keyB, 'GET', `${mine}/packages/${packageId}`)).status).toBe(404);
    expect((await request(keyB, 'GET', `/v1/agents/${a}/plugins/${pluginId}`)).status).toBe(404);
    expect(
      (await request(keyB, 'GET', `/v1/agents/${a}/plugins/${pluginId}/packages/${packageId}`)).status,
    ).toBe(404);
    for (const [name, args] of [
      ['cordis_inspect_self', { pluginId, packageId }],
      ['cordis_inspect_self', { pluginId }],
      ['cordis_run', { pluginId, packageId, mode: 'run' }],
      ['cordis_run', { pluginId, packageId, mode: 'update' }],
      ['cordis_stop', { pluginId }],
      ['cordis_undefine', { pluginId }],
      [
        'cordis_define',
        { plugin: { kind: 'existing', pluginId }, name: 'x', purpose: '', code: { host: '' } },
      ],
    ] as const)
      expect((await call(keyB, b, name, args)).error?.code, name).toBe('NOT_FOUND');
    const query = await call(keyB, b, 'cordis_inspect_query', {
      platform: 'host',
      provider: 'plugins',
      method: 'get',
      input: { pluginId },
    });
    expect(JSON.stringify(query)).not.toContain('secret');
    // A's client query is A's: B cannot see or answer it.
    const asking = call(keyA, a, 'cordis_inspect_query', { platform: 'client', provider: 'p', method: 'm' });
    let pending: Loose[] = [];
    while (pending.length === 0)
      pending = (await request(keyA, 'GET', `/v1/agents/${a}/requests?state=pending`)).json.requests;
    expect(
      (await request(keyB, 'POST', `/v1/agents/${a}/requests/${pending[0].id}`, { result: 1 })).status,
    ).toBe(404);
    expect(
      (await request(keyB, 'POST', `/v1/agents/${b}/requests/${pending[0].id}`, { result: 1 })).status,
    ).toBe(404);
    await request(keyA, 'POST', `/v1/agents/${a}/requests/${pending[0].id}`, { result: 'mine' });
    expect((await asking).value).toBe('mine');
    // MCP with B's key on A's agent: 404 for every method and era.
    for (const method of ['GET', 'POST', 'DELETE'])
      expect(
        (
          await request(
            keyB,
            method,
            `/v1/agents/${a}/mcp`,
            method === 'POST' ? { jsonrpc: '2.0', id: 1, method: 'tools/list' } : undefined,
            { Accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
          )
        ).status,
      ).toBe(404);
  });

  it('MCP on a deleted agent is 404', async () => {
    const gone = (await request(keyA, 'POST', '/v1/agents', {})).json.id;
    expect((await request(keyA, 'DELETE', `/v1/agents/${gone}`)).status).toBe(204);
    const res = await request(
      keyA,
      'POST',
      `/v1/agents/${gone}/mcp`,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'bash', arguments: { command: 'id' } } },
      { Accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
    );
    expect(res.status).toBe(404);
  });
});
