// Deleting an agent stops what it started (issue 11): a program still looping on tools when its
// agent is deleted runs nothing after the 204, its policy keeps failing closed, its pending host
// requests are cancelled, and nothing (an inner call, a route that loaded the agent before the
// delete, a sandbox creation racing the delete) leaves a sandbox behind for it.
import * as v from 'valibot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerCordisTools } from '../../../host/cordis/cordis-tools.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { Sandbox, SandboxProvider } from '../../../host/sandbox/types.ts';
import { defineTool } from '../../../host/tools/index.ts';
import { until } from '../../helpers/until.ts';
import { type Api, makeApi } from './harness.ts';
import { readSse } from './sse.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Round {
  write: string;
  bash: string;
}

/**
 * A stand-in for a run_code program (the unit project has no isolate host): it keeps making inner
 * calls through the pipeline, and (like a hostile body) ignores its signal for `extra` more rounds
 * after it was aborted.
 */
const loopTool = (rounds: Round[], extra = 3) =>
  defineTool({
    name: 'loop_tools',
    description: 'calls write and bash in a loop',
    parameters: v.object({}),
    output: { schema: v.string() },
    async execute(_args, exec) {
      let after = 0;
      for (let i = 0; i < 10_000; i++) {
        const w = await exec.callTool('write', { file_path: `f${i}.txt`, content: 'x' });
        const b = await exec.callTool('bash', { command: 'echo hi', description: 'probe' });
        rounds.push({ write: w.error?.code ?? 'ok', bash: b.error?.code ?? 'ok' });
        if (exec.signal.aborted && ++after > extra) break;
        await sleep(5); // a program's pace between rounds
      }
      return 'done';
    },
  });

describe('deleting an agent', () => {
  it('stops its running program: nothing runs after the 204, policy stays closed, no new sandbox', async () => {
    const rounds: Round[] = [];
    // Installed in the creator preset's own layer, as a deployment installs a privileged tool.
    api.registry.scope('creator').register(loopTool(rounds));
    const agent = await api.createAgent(api.keyA, { preset: 'creator', policy: { deny: ['bash'] } });
    const batch = api.call(api.keyA, agent.id, [{ id: 'p', name: 'loop_tools', arguments: {} }]);
    await until(() => rounds.length >= 3);
    expect(rounds.every((r) => r.write === 'ok' && r.bash === 'DENIED')).toBe(true);
    expect(await api.sandboxes.get(agent.id)).toBeDefined();

    const deleted = await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`);
    const seenBefore204 = rounds.length;
    expect(deleted.status).toBe(204);
    // The batch ended with the delete, not at some later point.
    const res = await batch;
    expect(res.status).toBe(200);
    expect(res.json.results[0].ok).toBe(false);
    const after = rounds.slice(seenBefore204);
    const late = rounds.slice(rounds.findIndex((r) => r.write !== 'ok'));
    expect(late.length).toBeGreaterThan(0);
    for (const r of [...after, ...late]) {
      expect(r.write).not.toBe('ok');
      expect(['DENIED', 'ABORTED_BEFORE_DISPATCH', 'ABORTED']).toContain(r.bash);
      expect(['DENIED', 'ABORTED_BEFORE_DISPATCH', 'ABORTED']).toContain(r.write);
    }
    expect(await api.sandboxes.get(agent.id)).toBeUndefined();
    expect(api.agents.liveSandboxes()).toBe(0);
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}`)).status).toBe(404);
  });

  it('cancels its pending host requests at once (the call does not wait for their expiry)', async () => {
    const agent = await api.createAgent(api.keyA, {
      remoteTools: [
        { name: 'ask_client', description: 'client side', parameters: { type: 'object' }, timeoutMs: 60_000 },
      ],
    });
    const batch = api.call(api.keyA, agent.id, [{ id: 'r', name: 'ask_client', arguments: {} }]);
    const request = await until(async () => (await api.store.requests.list(agent.id, 'pending'))[0]);
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    const res = await batch;
    expect(res.json.results[0].error.code).not.toBe('REQUEST_EXPIRED');
    expect(res.json.results[0].ok).toBe(false);
    expect(await api.store.requests.list(agent.id, 'pending')).toEqual([]);
    expect((await api.store.requests.get(request.id))?.state).toBe('cancelled');
    // Answering it afterwards is refused like any request of an unknown agent.
    const answer = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, {
      result: 1,
    });
    expect(answer.status).toBe(404);
  });

  it('cancels a host request stored only after the delete answered (its call was aborted first)', async () => {
    await api.close();
    // The DELETE answers once its grace for the held call is over: a short one.
    api = await makeApi({}, { agents: { deleteGraceMs: 100 } });
    const agent = await api.createAgent(api.keyA, {
      remoteTools: [{ name: 'ask_client', description: 'client side', parameters: { type: 'object' } }],
    });
    const requests = api.store.requests;
    const create = requests.create.bind(requests);
    const { promise: creating, resolve: reached } = Promise.withResolvers<void>();
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    let stored: ReturnType<typeof create> | undefined;
    requests.create = (input) => {
      if (input.sessionId !== agent.id) return create(input);
      reached();
      stored = released.then(() => create(input));
      return stored;
    };
    const batch = api.call(api.keyA, agent.id, [{ id: 'r', name: 'ask_client', arguments: {} }]);
    await creating;
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    release();
    expect((await batch).json.results[0].ok).toBe(false);
    // The body's wait sees its call's signal aborted and cancels what it made (requests/await.ts).
    const late = await stored!;
    await until(async () => (await requests.get(late.id))?.state === 'cancelled', {
      what: 'the late request cancelled',
    });
  });

  it('removes a plugin stored only after the delete answered (its cordis_define call was aborted first)', async () => {
    await api.close();
    // The plugin host without an isolate host: cordis_define only stores a package.
    api = await makeApi({}, { agents: { plugins: {}, deleteGraceMs: 100 } });
    registerCordisTools(api.registry.global);
    const agent = await api.createAgent(api.keyA, { preset: 'creator' });
    const plugins = api.store.plugins!;
    const define = plugins.define.bind(plugins);
    const { promise: defining, resolve: reached } = Promise.withResolvers<void>();
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    let stored: ReturnType<typeof define> | undefined;
    plugins.define = (owner, input) => {
      if (owner.agentId !== agent.id) return define(owner, input);
      reached();
      stored = released.then(() => define(owner, input));
      return stored;
    };
    const batch = api.call(api.keyA, agent.id, [
      {
        id: 'd',
        name: 'cordis_define',
        arguments: {
          plugin: { kind: 'new', idPrefix: 'late' },
          name: 'late',
          purpose: 'stored after its agent was deleted',
          code: { host: 'return { name: "late", apply() {} }' },
        },
      },
    ]);
    await defining;
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    release();
    expect((await batch).json.results[0].ok).toBe(false);
    await stored;
    await until(
      async () => (await plugins.listPlugins({ tenantId: api.tenantA, agentId: agent.id })).length === 0,
      {
        what: 'the late plugin removed',
      },
    );
  });

  it('refuses its files, archive, tools and calls, and never creates a sandbox for it again', async () => {
    const agent = await api.createAgent(api.keyA);
    const loaded = await api.agents.get((await api.store.tenants.verifyKey(api.keyA))!.id, agent.id);
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    for (const [method, path] of [
      ['GET', 'files?path=a.txt'],
      ['PUT', 'files?path=a.txt'],
      ['GET', 'archive?path=.'],
      ['GET', 'tools'],
      ['POST', 'calls'],
    ] as const) {
      const res = await api.request(
        api.keyA,
        method,
        `/v1/agents/${agent.id}/${path}`,
        method === 'POST' ? { calls: [{ id: 'c', name: 'read', arguments: { file_path: 'a' } }] } : undefined,
      );
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    // A request that loaded the agent just before the delete (its handler still holds it).
    await expect(api.agents.sandbox(loaded)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(api.agents.call(loaded, [], { signal: new AbortController().signal })).rejects.toMatchObject(
      {
        code: 'NOT_FOUND',
      },
    );
    expect(await api.sandboxes.get(agent.id)).toBeUndefined();
  });

  it('ends its open event stream with a deleted message', async () => {
    const agent = await api.createAgent(api.keyA);
    // One call, so that the stream has an event to replay: once it arrived, the stream is live.
    await api.call(api.keyA, agent.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'a', content: 'x' } },
    ]);
    const res = await api.app.request(`/v1/agents/${agent.id}/events`, {
      headers: { Authorization: `Bearer ${api.keyA}`, Accept: 'text/event-stream' },
    });
    expect(res.status).toBe(200);
    let replayed = false;
    const reading = readSse(res.body as ReadableStream<Uint8Array>, () => {
      replayed = true;
      return false;
    });
    await until(() => replayed);
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    const messages = await reading; // resolves only when the server ends the stream
    expect(messages.at(-1)).toMatchObject({ event: 'deleted', data: { message: 'The agent was deleted.' } });
  });

  it('a sandbox creation racing the delete leaves nothing behind', async () => {
    await api.close();
    const base = createMemoryProvider();
    let creating = 0;
    let created = 0;
    // The memory provider with a slow create, like Docker's (a container takes a while to make).
    const slow: SandboxProvider = {
      ...base,
      async create(spec): Promise<Sandbox> {
        creating++;
        await sleep(50);
        created++;
        return base.create(spec);
      },
    };
    api = await makeApi({}, { sandboxes: slow });
    const agent = await api.createAgent(api.keyA);
    const loaded = await api.agents.get((await api.store.tenants.verifyKey(api.keyA))!.id, agent.id);
    const first = api.agents.sandbox(loaded).catch((e: unknown) => e);
    await until(() => creating === 1); // creation under way
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    await first;
    expect(created).toBe(1);
    expect(await base.get(agent.id)).toBeUndefined();
    await expect(api.agents.sandbox(loaded)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(created).toBe(1);
  });

  it('a sandbox whose removal failed at delete is removed by a retry soon after, without a restart', async () => {
    await api.close();
    const base = createMemoryProvider();
    let failures = 2; // the engine refuses the delete's removal and the first retry
    const flaky: SandboxProvider = {
      ...base,
      async destroy(agentId) {
        if (failures-- > 0) throw new Error('engine busy');
        return base.destroy(agentId);
      },
    };
    api = await makeApi({}, { sandboxes: flaky, agents: { reapRetryMs: 20 } });
    const agent = await api.createAgent(api.keyA);
    await api.call(api.keyA, agent.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'a', content: 'x' } },
    ]);
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBeGreaterThanOrEqual(
      500,
    );
    await until(async () => (await base.get(agent.id)) === undefined, { what: 'the retried removal' });
    expect(failures).toBe(-1); // removed at the second retry, and not tried again after
  });

  it('a sandbox whose removal failed at delete is removed at the next start (reapDeleted)', async () => {
    await api.close();
    const base = createMemoryProvider();
    let failDestroy = true;
    // The engine refuses the first removal (as a Docker engine under load or restarting may).
    const flaky: SandboxProvider = {
      ...base,
      async destroy(agentId) {
        if (failDestroy) throw new Error('engine busy');
        return base.destroy(agentId);
      },
    };
    api = await makeApi({}, { sandboxes: flaky });
    const agent = await api.createAgent(api.keyA);
    expect(
      (
        await api.call(api.keyA, agent.id, [
          { id: 'w', name: 'write', arguments: { file_path: 'a', content: 'x' } },
        ])
      ).status,
    ).toBe(200);
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBeGreaterThanOrEqual(
      500,
    );
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}`)).status).toBe(404);
    expect(await base.get(agent.id)).toBeDefined(); // left behind, and no API call can reach it now

    failDestroy = false;
    const errors: string[] = [];
    expect(await api.agents.reapDeleted((id) => errors.push(id))).toBe(1);
    expect(errors).toEqual([]);
    expect(await base.get(agent.id)).toBeUndefined();
    expect(await api.agents.reapDeleted()).toBe(0); // done once, not again at every start
  });
});
