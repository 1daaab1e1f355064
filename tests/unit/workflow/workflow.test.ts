// workflow end to end: real isolate workers, the real pipeline, a fake SpawnProvider. What the
// script can reach, how the primitives order and bound their work, what the model reads back and
// what lands in the durable log.
import { afterAll, describe, expect, it } from 'vitest';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { fakeSpawner, setup, textOf, workflowCall } from './helpers.ts';

const isolates = createIsolateHost({ workers: 1, prewarm: 2 });
afterAll(() => isolates.close());

const SEED_SCRIPT =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the seed's example script, verbatim
  "const reports = await pipeline(args.groups, async (group) => agent(`Audit packages/${group}`, { phase: 'Inspect' })); phase('Synthesize'); return reports.filter(Boolean);";

const meta = { name: 'test', description: 'A test workflow.' };
const workflow = (script: string, args?: object, id = 'w1') =>
  workflowCall(id, { script, meta, ...(args === undefined ? {} : { args }) });

describe('workflow', () => {
  it('runs the seed example: pipeline over args.groups, phase, return value', async () => {
    const spawner = fakeSpawner((r) => (r.prompt.endsWith('llm') ? '' : `report of ${r.prompt}`));
    const s = setup(isolates, spawner);
    const result = await s.run(
      workflowCall('w1', {
        meta: {
          name: 'package-audit',
          description: 'Audit several package groups independently.',
          phases: [
            { title: 'Inspect', detail: 'Read each package group.', model: 'small' },
            { title: 'Synthesize', detail: 'Merge the findings.' },
          ],
        },
        args: { groups: ['core', 'session', 'llm'] },
        script: SEED_SCRIPT,
      }),
    );
    expect(result.ok).toBe(true);
    expect(result.value).toEqual({
      logs: [],
      phases: ['Synthesize'],
      value: ['report of Audit packages/core', 'report of Audit packages/session'],
    });
    expect(textOf(result.content)).toBe(
      JSON.stringify(['report of Audit packages/core', 'report of Audit packages/session'], null, 2),
    );
    expect(spawner.requests.map((r) => [r.prompt, r.phase, r.model, r.workflow])).toEqual([
      ['Audit packages/core', 'Inspect', 'small', 'package-audit'],
      ['Audit packages/session', 'Inspect', 'small', 'package-audit'],
      ['Audit packages/llm', 'Inspect', 'small', 'package-audit'],
    ]);
    // Every step is an inner, log-only call of the workflow call.
    const events = await s.log.list('session-1');
    const inner = events.filter((e) => e.type === 'tool.call' && e.parentCallId === 'w1');
    expect(inner.map((e) => (e.data as { name: string }).name).sort()).toEqual([
      'agent',
      'agent',
      'agent',
      'phase',
    ]);
    expect(inner.every((e) => e.surface === 'log-only')).toBe(true);
  });

  it('log() lines come first, then the result; a structured answer resolves as its value', async () => {
    const spawner = fakeSpawner((r) => ({ text: 'ignored', value: { prompt: r.prompt, n: 1 } }));
    const s = setup(isolates, spawner);
    const result = await s.run(
      workflow('log("start"); log({ a: 1 }); const v = await agent("x"); phase("P"); return v;'),
    );
    expect(textOf(result.content)).toBe('start\n{"a":1}\n{\n  "prompt": "x",\n  "n": 1\n}');
    expect(spawner.requests[0]?.phase).toBeUndefined();
    const quiet = await s.run(workflow('phase("A"); await agent("y");', undefined, 'w2'));
    expect(textOf(quiet.content)).toBe('(workflow completed with no output)');
    expect(spawner.requests[1]?.phase).toBe('A');
  });

  it('parallel and pipeline keep order, overlap, and run at most 8 subagents at once', async () => {
    const spawner = fakeSpawner((r) => r.prompt.toUpperCase(), 30);
    const s = setup(isolates, spawner);
    const result = await s.run(
      workflow(
        [
          'const letters = "abcdefghijklmnopqrst".split("");',
          'const a = await parallel(letters.map((l) => () => agent(l)));',
          'const b = await pipeline(["x", "y"], (v) => agent(v), async (v, i) => v + i);',
          'return { a: a.join(""), b };',
        ].join('\n'),
      ),
    );
    expect(result.value).toMatchObject({ value: { a: 'ABCDEFGHIJKLMNOPQRST', b: ['X0', 'Y1'] } });
    expect(spawner.maxInFlight).toBe(8);
  });

  it('the script reaches only the primitives: no tools, console, process, require, fetch or timers', async () => {
    const s = setup(
      isolates,
      fakeSpawner(() => 'ok'),
    );
    const names = [
      'tools',
      'console',
      'process',
      'require',
      'fetch',
      'setTimeout',
      'setInterval',
      '__main',
      '__workflow',
      'agent',
      'pipeline',
      'parallel',
      'phase',
      'log',
      'args',
    ];
    const result = await s.run(
      workflow(
        `return { types: { ${names.map((n) => `${n}: typeof ${n}`).join(', ')} }, global: typeof globalThis.console,
          callee: (() => { try { return typeof arguments.callee; } catch (e) { return e.name; } })() };`,
      ),
    );
    expect(result.value).toMatchObject({
      value: {
        types: {
          tools: 'undefined',
          console: 'undefined',
          process: 'undefined',
          require: 'undefined',
          fetch: 'undefined',
          setTimeout: 'undefined',
          setInterval: 'undefined',
          __main: 'undefined',
          __workflow: 'undefined',
          agent: 'function',
          pipeline: 'function',
          parallel: 'function',
          phase: 'function',
          log: 'function',
          args: 'object',
        },
        global: 'undefined',
        callee: 'TypeError',
      },
    });
  });

  it('a script that tries to close its function early does not compile, so it cannot reach tools', async () => {
    const s = setup(
      isolates,
      fakeSpawner(() => 'ok'),
    );
    const result = await s.run(workflow('}).call(); return typeof tools; (async function () {'));
    expect(result.error).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'compile' } });
  });

  it('a throwing script fails with its message, its line and the captured log lines', async () => {
    const s = setup(
      isolates,
      fakeSpawner(() => 'ok'),
    );
    const result = await s.run(workflow('log("before");\nthrow new Error("nope");'));
    expect(result.ok).toBe(false);
    expect(result.error).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'runtime' } });
    const text = textOf(result.content);
    expect(text).toMatch(/^Error: workflow failed \(runtime\): Error: nope\n.*program\.ts:2/);
    expect(text.endsWith('Captured output:\nbefore')).toBe(true);
    // Frames are the script's own: nothing of the runtime around it, columns of line 1 unshifted.
    const first = await s.run(workflow('const x = null; return x.y;', undefined, 'w3'));
    expect(textOf(first.content)).toMatch(
      /^Error: workflow failed \(runtime\): TypeError: Cannot read properties of null \(reading 'y'\)\n {4}at program\.ts:1:2\d$/,
    );
    const syntax = await s.run(workflow('const x = ;', undefined, 'w2'));
    expect(textOf(syntax.content)).toMatch(/^Error: workflow failed \(compile\): program\.ts:1:11/);
  });

  it('a script that can never finish ends at once (stalled), not at its 30-minute wall clock', async () => {
    const s = setup(
      isolates,
      fakeSpawner((r) => r.prompt, 100),
    );
    const stuck = await s.run(workflow('phase("A"); await agent("x"); await new Promise(() => {});'));
    expect(stuck.error).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'stalled' } });
    expect(textOf(stuck.content)).toMatch(
      /^Error: workflow failed \(stalled\): the program awaits a promise that nothing can settle/,
    );
    // Waiting on a slow subagent through a promise of its own is not a stall.
    const waits = await s.run(
      workflow(
        'let done; const gate = new Promise((r) => { done = r; }); agent("y").then(done); return await gate;',
        undefined,
        'w2',
      ),
    );
    expect(waits.value).toMatchObject({ value: 'y' });
  });

  it('more agent() calls than the cap stop the workflow, even if the script catches', async () => {
    const spawner = fakeSpawner(() => 'ok');
    const s = setup(isolates, spawner, { maxAgents: 3 });
    const result = await s.run(
      workflow('for (let i = 0; i < 10; i++) { try { await agent("t" + i); } catch {} } return "finished";'),
    );
    expect(result.error).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'limit' } });
    expect(textOf(result.content)).toBe(
      'Error: workflow failed (limit): more than 3 agent() calls in one workflow; split the work into fewer, larger steps',
    );
    expect(spawner.requests).toHaveLength(3);
  });

  it('a failed subagent rejects agent() with its message; bad options are refused', async () => {
    const s = setup(
      isolates,
      fakeSpawner(() => {
        throw new Error('subagent crashed');
      }),
    );
    const result = await s.run(
      workflow(
        'const out = []; for (const f of [() => agent("a"), () => agent("b", { colour: 1 }), () => agent(3)]) { try { await f(); } catch (e) { out.push(e.message); } } return out;',
      ),
    );
    const messages = (result.value as { value: string[] }).value;
    expect(messages[0]).toBe('subagent crashed');
    expect(messages[1]).toMatch(/^Invalid arguments for agent: /);
    expect(messages[2]).toBe('agent(prompt, options?): prompt must be a non-empty string');
  });

  it('is offered only to agents that can spawn subagents', async () => {
    expect(
      await setup(
        isolates,
        fakeSpawner(() => 'ok'),
      ).surface(),
    ).toEqual(['workflow', 'ralph']);
    const without = setup(isolates, undefined);
    expect(await without.surface()).toEqual([]);
    expect((await without.run(workflow('return 1;'))).error?.code).toBe('UNKNOWN_TOOL');
  });
});

describe('ralph', () => {
  it('stops at the first answer that begins with DONE', async () => {
    let round = 0;
    const spawner = fakeSpawner(() => (++round === 3 ? 'DONE: all fixed' : `round ${round}: fixed some`));
    const s = setup(isolates, spawner);
    const result = await s.run({ id: 'r1', name: 'ralph', arguments: { objective: 'Fix the errors.' } });
    expect(result.value).toMatchObject({
      phases: ['Round 1', 'Round 2', 'Round 3'],
      value: { done: true, rounds: 3, report: 'DONE: all fixed' },
    });
    expect(spawner.requests).toHaveLength(3);
    expect(spawner.requests[0]?.prompt).toContain('Objective: Fix the errors.');
    expect(spawner.requests[2]?.prompt).toContain('Round 2 reported:\nround 2: fixed some');
    expect(textOf(result.content).split('\n').slice(0, 3)).toEqual([
      'Round 1: round 1: fixed some',
      'Round 2: round 2: fixed some',
      'Round 3: DONE: all fixed',
    ]);
  });

  it('stops after maxRounds without DONE', async () => {
    const spawner = fakeSpawner(() => 'still working');
    const s = setup(isolates, spawner);
    const result = await s.run({ id: 'r1', name: 'ralph', arguments: { objective: 'x', maxRounds: 2 } });
    expect(result.value).toMatchObject({ value: { done: false, rounds: 2, report: 'still working' } });
    expect(spawner.requests).toHaveLength(2);
    const over = await s.run({ id: 'r2', name: 'ralph', arguments: { objective: 'x', maxRounds: 65 } });
    expect(over.error?.code).toBe('INVALID_ARGUMENTS');
  });
});
