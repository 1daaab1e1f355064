// planModePolicy: a guard that, while the agent's session says plan mode, refuses every call not
// declared read-only under the code PLAN_MODE; a classifier that throws counts as mutating, and
// no later policy can allow what it refused.
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import type { SessionService } from '../../../host/tools/builtin/index.ts';
import { strReplaceEditorTool } from '../../../host/tools/builtin/index.ts';
import { type AgentScope, createRegistry, defineTool } from '../../../host/tools/index.ts';
import { planModePolicy, rulesPolicy } from '../../../policies/index.ts';
import { call, echoTool } from '../tools/helpers.ts';

const inPlanMode = (on: { value: boolean }): AgentScope => ({
  id: 'agent-1',
  sessionId: 'session-1',
  services: { session: { planMode: () => on.value } as unknown as SessionService },
});

const classified = (name: string, isReadOnly: () => boolean) =>
  defineTool({
    name,
    description: name,
    parameters: v.object({}),
    output: { schema: v.string() },
    execute: () => 'ran',
    isReadOnly,
  });

const setup = () => {
  const registry = createRegistry({});
  registry.global.register(echoTool('mutate'));
  registry.global.register(classified('look', () => true));
  registry.global.register(
    classified('confused', () => {
      throw new Error('cannot tell');
    }),
  );
  registry.global.register(strReplaceEditorTool);
  planModePolicy().install(registry.global);
  return registry;
};

describe('planModePolicy', () => {
  it('refuses what is not declared read-only (a throwing classifier included) only while plan mode is on', async () => {
    const registry = setup();
    const on = { value: true };
    const calls = [call('1', 'mutate', { text: 'x' }), call('2', 'look'), call('3', 'confused')];
    const during = await registry.global.execute(calls, { agent: inPlanMode(on) });
    expect(during.map((r) => r.error?.code ?? 'ok')).toEqual(['PLAN_MODE', 'ok', 'PLAN_MODE']);
    expect(during[0]?.content[0]).toMatchObject({
      text: expect.stringMatching(/^Error: Plan mode is on: mutate/),
    });
    on.value = false;
    const after = await registry.global.execute(calls, { agent: inPlanMode(on) });
    expect(after.map((r) => r.ok)).toEqual([true, true, true]);
    // An agent without a session service is never in plan mode.
    const bare = await registry.global.execute(calls.slice(0, 1), {
      agent: { id: 'a', sessionId: 's', services: {} },
    });
    expect(bare[0]?.ok).toBe(true);
  });

  it("str_replace_editor's view is read-only, its edits are not", async () => {
    const registry = setup();
    const [view, create] = await registry.global.execute(
      [
        call('1', 'str_replace_editor', { command: 'view', path: 'a' }),
        call('2', 'str_replace_editor', { command: 'create', path: 'a', file_text: 'x' }),
      ],
      { agent: inPlanMode({ value: true }) },
    );
    // view passes the guard and fails later for want of a sandbox; create never gets that far.
    expect(view?.error?.code).not.toBe('PLAN_MODE');
    expect(create?.error?.code).toBe('PLAN_MODE');
  });

  it('a later allow rule cannot undo its refusal', async () => {
    const registry = setup();
    rulesPolicy({ rules: [{ tool: '*', decision: 'allow' }] }).install(registry.global);
    const [result] = await registry.global.execute([call('1', 'mutate', { text: 'x' })], {
      agent: inPlanMode({ value: true }),
    });
    expect(result?.error?.code).toBe('PLAN_MODE');
  });
});
