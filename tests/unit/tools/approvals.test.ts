import { describe, expect, it } from 'vitest';
import { createMemoryRequestStore } from '../../../host/store/memory.ts';
import { type ApprovalRequest, createRegistry, createRequestApprovals } from '../../../host/tools/index.ts';
import { until } from '../../helpers/until.ts';
import { agent, call, echoTool } from './helpers.ts';

const askEverything = (registry: ReturnType<typeof createRegistry>) =>
  registry.global.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'echo needs a human' }));

describe('ask decisions', () => {
  it('ask without an approver denies', async () => {
    const registry = createRegistry();
    registry.global.register(echoTool());
    askEverything(registry);
    const [r] = await registry.global.execute([call('1', 'echo', { text: 'x' })], { agent });
    expect(r?.error?.code).toBe('DENIED');
    expect(r?.error?.message).toMatch(/needs approval/);
  });

  it('ask goes to the approvals port with the call details; allow runs the call', async () => {
    const requests: ApprovalRequest[] = [];
    const registry = createRegistry({
      approvals: {
        request: async (req) => {
          requests.push(req);
          return { allow: true };
        },
      },
    });
    registry.global.register(echoTool());
    askEverything(registry);
    const [r] = await registry.global.execute([call('c9', 'echo', { text: 'x' })], { agent });
    expect(r?.ok).toBe(true);
    expect(requests[0]).toMatchObject({
      sessionId: 'session-1',
      callId: 'c9',
      toolName: 'echo',
      arguments: { text: 'x' },
      reason: 'echo needs a human',
    });
  });

  it('a guard denies before anyone is asked', async () => {
    let asked = false;
    const registry = createRegistry({
      approvals: {
        request: async () => {
          asked = true;
          return { allow: true };
        },
      },
    });
    registry.global.register(echoTool());
    askEverything(registry);
    registry.global.guard(() => 'never');
    const [r] = await registry.global.execute([call('1', 'echo', { text: 'x' })], { agent });
    expect(r?.error?.code).toBe('DENIED');
    expect(asked).toBe(false);
  });
});

describe('approvals over the RequestStore', () => {
  const setup = (ttlMs = 60_000) => {
    const store = createMemoryRequestStore();
    const registry = createRegistry({ approvals: createRequestApprovals(store, { ttlMs }) });
    registry.global.register(echoTool());
    askEverything(registry);
    return { store, registry };
  };

  it('creates a pending approval request and runs the call when the client allows it', async () => {
    const { store, registry } = setup();
    const pending = registry.global.execute([call('c1', 'echo', { text: 'x' })], { agent });
    const req = await until(async () => (await store.list('session-1', 'pending'))[0]);
    expect(req).toMatchObject({
      kind: 'approval',
      callId: 'c1',
      payload: { toolName: 'echo', arguments: { text: 'x' }, reason: 'echo needs a human' },
    });
    await store.answer(req.id, { allow: true });
    expect((await pending)[0]?.ok).toBe(true);
    store.close?.();
  });

  it('a client denial becomes DENIED with its reason', async () => {
    const { store, registry } = setup();
    const pending = registry.global.execute([call('c1', 'echo', { text: 'x' })], { agent });
    const req = await until(async () => (await store.list('session-1', 'pending'))[0]);
    await store.answer(req.id, {
      allow: false,
      reason: 'not on prod',
    });
    const [r] = await pending;
    expect(r?.error).toEqual({ code: 'DENIED', message: 'Tool echo was not approved: not on prod' });
    store.close?.();
  });

  it('an approval nobody answers in time is DENIED', async () => {
    const { store, registry } = setup(30);
    const [r] = await registry.global.execute([call('c1', 'echo', { text: 'x' })], { agent });
    expect(r?.error?.code).toBe('DENIED');
    expect(r?.error?.message).toMatch(/nobody answered/);
    store.close?.();
  });

  it('cancelling the call while waiting cancels the request and is ABORTED_BEFORE_DISPATCH', async () => {
    const { store, registry } = setup();
    const controller = new AbortController();
    const pending = registry.global.execute([call('c1', 'echo', { text: 'x' })], {
      agent,
      signal: controller.signal,
    });
    await until(async () => (await store.list('session-1', 'pending')).length > 0);
    controller.abort();
    const [r] = await pending;
    expect(r?.error?.code).toBe('ABORTED_BEFORE_DISPATCH');
    expect(await store.list('session-1', 'pending')).toEqual([]);
    store.close?.();
  });
});
