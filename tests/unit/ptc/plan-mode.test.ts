// Issue 15: plan mode is enforced by the pipeline, not by a prompt, so it holds inside programs
// too. The composed service (assembleAgents) with a real isolate host: while the agent is in plan
// mode a `write` and a `tools.bash` inside run_code are refused (PLAN_MODE) and nothing runs; once
// the plan submitted with exit_plan_mode is approved, both run.
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolCall } from '../../../host/tools/index.ts';
import { composedService } from '../../helpers/composed.ts';
import { until } from '../../helpers/until.ts';

const { agents, store, commands, tenant, close } = await composedService();
afterAll(close);

const PROGRAM = `
  try {
    const out = await tools.bash({ command: 'echo hi', description: 'Say hi' });
    return { ran: true, out };
  } catch (error) {
    return { ran: false, message: String(error.message ?? error) };
  }`;

describe('plan mode', () => {
  it('refuses write and tools.bash inside run_code while on, and allows both after the plan is approved', async () => {
    const agent = await agents.create(tenant, {
      preset: 'standard',
      mode: 'both',
      policy: { planMode: true },
    });
    const call = (calls: ToolCall[]) => agents.call(agent, calls, { signal: new AbortController().signal });
    const write: ToolCall = { id: 'w', name: 'write', arguments: { file_path: 'plan.txt', content: 'x' } };
    const program: ToolCall = {
      id: 'p',
      name: 'run_code',
      arguments: { code: PROGRAM, description: 'bash' },
    };

    const [refusedWrite, refusedProgram] = await call([write, program]);
    expect(refusedWrite?.error?.code).toBe('PLAN_MODE');
    expect(refusedProgram?.ok).toBe(true);
    expect(refusedProgram?.value).toMatchObject({ value: { ran: false } });
    expect(JSON.stringify(refusedProgram?.value)).toContain('Plan mode is on: bash');
    expect(commands).toEqual([]);
    // The inner call's durable result says why, under the stable code.
    const inner = (await store.events.list(agent.sessionId)).find(
      (e) => e.type === 'tool.result' && e.parentCallId === 'p',
    );
    expect(inner?.data).toMatchObject({ name: 'bash', ok: false, error: { code: 'PLAN_MODE' } });

    const submitted = call([{ id: 'x', name: 'exit_plan_mode', arguments: { plan: '1. Say hi.' } }]);
    const review = await until(async () => (await store.requests.list(agent.sessionId, 'pending'))[0]);
    expect(review.kind).toBe('plan_review');
    await store.requests.answer(review.id, { allow: true });
    expect((await submitted)[0]?.value).toEqual({ approved: true });

    const [allowedWrite, allowedProgram] = await call([write, program]);
    expect(allowedWrite?.ok).toBe(true);
    expect(allowedProgram?.value).toMatchObject({ value: { ran: true } });
    expect(commands).toEqual(['echo hi']);
  });
});
