// Issue 28, the reported case over the public HTTP API with real containers: an agent narrowed to
// one egress host starts a child with `childWorkspace: "isolated"` (a sandbox of its own); the child
// is refused a host its tenant allows but its parent may not reach, through its own sandbox's proxy,
// and its config shows its parent's egress, not `egress: null`. The loopback "internet" of
// ../api/internet.ts stands in for the world (127.0.0.2 the parent's host, 127.0.0.3 the other).
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Loose } from '../../unit/api/harness.ts';
import { type Internet, startInternet } from '../api/internet.ts';
import { json, served } from '../api/served.ts';

let internet: Internet;
beforeAll(async () => {
  internet = await startInternet();
});
afterAll(async () => {
  await internet?.close();
});

const service = served('inheritance', { egressTestHosts: [{ ip: '127.0.0.2' }, { ip: '127.0.0.3' }] });

it("a child in an isolated workspace is refused what its parent's egress refuses", async () => {
  const server = await service.start();
  const key = (await server.store.tenants.createTenant('inheritance')).apiKey;
  const { http, other } = internet;
  const api = async (method: string, path: string, body?: unknown): Promise<Loose> => {
    const res = await json(server, key, method, path, body);
    expect(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`).toBe(true);
    return res.json;
  };
  let n = 0;
  const call = async (agentId: string, name: string, args: unknown): Promise<Loose> =>
    (await api('POST', `/v1/agents/${agentId}/calls`, { calls: [{ id: `c${++n}`, name, arguments: args }] }))
      .results[0];
  /** curl through the sandbox's proxy: the status line and the gateway's verdict header. */
  const curl = async (agentId: string, url: string): Promise<string> => {
    const result = await call(agentId, 'bash', {
      command: `curl -sS -D - -o /dev/null ${url}/hello`,
      description: 'egress probe',
      timeoutMs: 120_000,
    });
    expect(result.ok, JSON.stringify(result)).toBe(true);
    return String(result.value.stdout);
  };

  // The tenant allows both loopback hosts; the parent narrows its own egress to the first.
  await api('PUT', '/v1/egress', {
    allow: [
      { host: '127.0.0.2', ports: [http.port] },
      { host: '127.0.0.3', ports: [other.port] },
    ],
  });
  const narrowed = { allow: [{ host: '127.0.0.2', ports: [http.port] }] };
  const parent = await api('POST', '/v1/agents', {
    subagents: true,
    childWorkspace: 'isolated',
    egress: narrowed,
  });
  expect(await curl(parent.id, http.url)).toMatch(/^HTTP\/1\.1 200/);
  const refused = await curl(parent.id, other.url);
  expect(refused).toMatch(/^HTTP\/1\.1 403/);
  expect(refused).toMatch(/x-dsh-egress: denied/i);

  const spawned = await call(parent.id, 'subagent', {
    description: 'probe',
    prompt: 'Reach the other host.',
    run_in_background: true,
  });
  expect(spawned.ok, JSON.stringify(spawned)).toBe(true);
  const childId = spawned.value.agent_id as string;
  // Its own container, its own proxy, its parent's allowlist.
  internet.seen.length = 0;
  const childRefused = await curl(childId, other.url);
  expect(childRefused).toMatch(/^HTTP\/1\.1 403/);
  expect(childRefused).toMatch(/x-dsh-egress: denied; reason="[^"]*agent's egress allowlist/i);
  expect(internet.seen.some((s) => s.site === 'other')).toBe(false);
  expect(await curl(childId, http.url)).toMatch(/^HTTP\/1\.1 200/);
  const sandboxOf = async (id: string) => (await server.store.agents.byId(id))?.sandboxId;
  expect(await sandboxOf(childId)).toEqual(expect.any(String));
  expect(await sandboxOf(childId)).not.toBe(await sandboxOf(parent.id));
  const child = await api('GET', `/v1/agents/${childId}`);
  expect(child.config).toMatchObject({ isolatedWorkspace: true, egress: narrowed });

  await api('DELETE', `/v1/agents/${parent.id}`);
});
