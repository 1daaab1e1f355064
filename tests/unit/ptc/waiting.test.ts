// run_code programs wait as long as the tools they call: an agent's own budgets (codeMode) within
// the service's maxima, CPU time for the program's own work, a wall clock that includes waiting,
// an `ask` approval that keeps a program suspended until answered, and cancellation of the outer
// call that ends both. Small budgets keep it fast: the service's wall clock here is 500 ms, and a
// tool (or a person) taking a second stands for one taking minutes.
import * as v from 'valibot';
import { afterAll, describe, expect, it } from 'vitest';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryEventLog, createMemoryRequestStore } from '../../../host/store/memory.ts';
import {
  type AgentScope,
  createRegistry,
  createRequestApprovals,
  defineTool,
} from '../../../host/tools/index.ts';
import { type CodeModeRequest, createPtcExecutor } from '../../../host/tools/ptc/index.ts';
import { until } from '../../helpers/until.ts';
import { program, textOf } from './helpers.ts';

const isolates = createIsolateHost({ workers: 1, prewarm: 2 });
afterAll(() => isolates.close());

/** Waits `ms` (a slow test run, a job, a remote tool) and honours cancellation. */
const slow = defineTool({
  name: 'slow',
  description: 'Waits, then answers.',
  parameters: v.object({ ms: v.number() }),
  output: { schema: v.string() },
  async execute(args, exec) {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, args.ms);
      exec.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(exec.signal.reason);
      });
    });
    return `waited ${args.ms} ms`;
  },
});

const agentWith = (id: string, codeMode?: CodeModeRequest): AgentScope => ({
  id,
  sessionId: `session-${id}`,
  services: codeMode === undefined ? {} : { codeMode },
});

const setup = () => {
  const requests = createMemoryRequestStore();
  const registry = createRegistry({
    log: createMemoryEventLog(),
    approvals: createRequestApprovals(requests, { ttlMs: 10_000 }),
  });
  const preset = registry.scope('code');
  preset.mount(
    createPtcExecutor({
      isolates,
      limits: { cpuMs: 200, wallMs: 500 },
      maxima: { cpuMs: 1_000, wallMs: 10_000 },
      codeModeOf: (agent) => agent.services.codeMode as CodeModeRequest | undefined,
    }),
  );
  preset.register(slow);
  return { registry, preset, requests };
};

const runAs = async (agent: AgentScope, code: string, signal?: AbortSignal) => {
  const { preset } = setup();
  const scope = preset.child(agent.id);
  const [result] = await scope.execute([program('p1', code)], {
    agent,
    mode: 'code',
    ...(signal ? { signal } : {}),
  });
  if (result === undefined) throw new Error('no result');
  return result;
};

describe("an agent's own code-mode budgets", () => {
  const patient = agentWith('patient', { wallMs: 5_000 });

  it('a program waits on a tool past the service default when its agent asked for a longer wall clock', async () => {
    const code = 'return await tools.slow({ ms: 1000 })';
    const hurried = await runAs(agentWith('hurried'), code);
    expect(hurried.ok).toBe(false);
    expect(textOf(hurried.content)).toBe(
      'Error: code run failed (timeout): the program ran longer than 500 ms',
    );
    const waited = await runAs(patient, code);
    expect(textOf(waited.content)).toBe('waited 1000 ms');
  });

  it('a program that spins is still ended by the CPU budget while the wall clock is long', async () => {
    // The message tells the CPU budget (200 ms) from the agent's wall clock (5 s).
    const result = await runAs(patient, 'await tools.slow({ ms: 100 }); for (;;) {}');
    expect(textOf(result.content)).toBe(
      'Error: code run failed (timeout): the program used more than 200 ms of CPU time',
    );
  });

  it("run_code's description states the limits that apply to the agent", async () => {
    const { preset } = setup();
    const describeFor = async (agent: AgentScope) => {
      const scope = preset.child(agent.id);
      const set = await scope.resolve({ agent });
      const [schema] = scope.surface('code', set);
      set.dispose();
      return schema?.description ?? '';
    };
    expect(await describeFor(agentWith('hurried'))).toContain(
      "Limits of one run: 200 ms of CPU time for the program's own work, 64 MB of memory, and 500 ms in all, time spent waiting on tools included",
    );
    expect(await describeFor(agentWith('frugal', { cpuMs: 1_000, wallMs: 2_000 }))).toContain(
      "1 s of CPU time for the program's own work, 64 MB of memory, and 2 s in all",
    );
    await expect(describeFor(agentWith('greedy', { wallMs: 20_000 }))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENTS',
      message: "codeMode.wallMs is 20000 ms, over this service's maximum of 10000 ms; ask for at most that.",
    });
  });
});

describe('an ask inside a program', () => {
  const agent = agentWith('asker', { wallMs: 5_000 });
  const askForSlow = (preset: ReturnType<typeof setup>['preset']) =>
    preset.on('tools/pre-execute', (event) =>
      event.name === 'slow' ? { kind: 'ask', reason: 'slow needs a person' } : undefined,
    );

  it('keeps the program suspended until a person answers, past the CPU budget and the service default', async () => {
    const { preset, requests } = setup();
    askForSlow(preset);
    const scope = preset.child(agent.id);
    const outcome = scope.execute([program('p1', 'return await tools.slow({ ms: 10 })')], {
      agent,
      mode: 'code',
    });
    const request = await until(async () => (await requests.list(agent.sessionId, 'pending'))[0]);
    expect(request).toMatchObject({ kind: 'approval', payload: { toolName: 'slow' } });
    // The behaviour under test: the person answers later than the service's default wall clock
    // (500 ms) and the CPU budget (200 ms); the program stays suspended within its own 5 s.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await requests.answer(request.id, { allow: true })).toBe(true);
    const [result] = await outcome;
    expect(textOf(result?.content ?? [])).toBe('waited 10 ms');
  });

  it('cancelling the outer call cancels the wait and the program', async () => {
    const { preset, requests } = setup();
    askForSlow(preset);
    const scope = preset.child(agent.id);
    const controller = new AbortController();
    const outcome = scope.execute([program('p1', 'return await tools.slow({ ms: 10 })')], {
      agent,
      mode: 'code',
      signal: controller.signal,
    });
    await until(async () => (await requests.list(agent.sessionId, 'pending')).length > 0);
    controller.abort();
    const [result] = await outcome;
    expect(result?.ok).toBe(false);
    // Ended by the cancellation, not by the 5 s wall clock a wait that ignored it would run into.
    expect(textOf(result?.content ?? [])).toMatch(/^Error: code run failed \(aborted\): /);
    expect(await requests.list(agent.sessionId, 'pending')).toEqual([]);
    expect(await requests.list(agent.sessionId, 'cancelled')).toHaveLength(1);
  });
});
