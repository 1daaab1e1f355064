// run_code end to end: real isolate workers, the real pipeline, an in-memory event log. What the
// model reads back, what the program sees of its tool calls, and what lands in the log.
import * as v from 'valibot';
import { afterAll, describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { defineTool } from '../../../host/tools/index.ts';
import { until } from '../../helpers/until.ts';
import { agent, program, setup, sleeper, textOf } from './helpers.ts';

const isolates = createIsolateHost({ workers: 1, prewarm: 2 });
afterAll(() => isolates.close());

const missing = defineTool({
  name: 'read',
  description: 'Read a file.',
  parameters: v.object({ path: v.string() }),
  output: { schema: v.string() },
  execute: (args) => {
    throw new SandboxError('FILE_NOT_FOUND', `${args.path} does not exist; list the directory first.`);
  },
});

const screenshot = defineTool({
  name: 'screenshot',
  description: 'Take a screenshot.',
  parameters: v.object({ page: v.string() }),
  output: {
    schema: v.object({ page: v.string(), bytes: v.number() }),
    render: (args) => [
      { type: 'text', text: `screenshot of ${args.page}` },
      { type: 'image', data: `PNG:${args.page}`, mimeType: 'image/png' },
    ],
  },
  execute: (args) => ({ page: args.page, bytes: 4 }),
});

const run = async (s: ReturnType<typeof setup>, code: string, id = 'p1') => {
  const [result] = await s.scope.execute([program(id, code)], { agent, mode: 'code' });
  if (result === undefined) throw new Error('no result');
  return result;
};

describe('run_code programs', () => {
  it('renders printed lines, then the return value as JSON', async () => {
    const s = setup(isolates);
    const result = await run(
      s,
      'console.log("hello", 1);\nconsole.log({ a: 1 });\nreturn { files: ["a.ts"], n: 2 };',
    );
    expect(result.ok).toBe(true);
    expect(result.content).toEqual([
      { type: 'text', text: 'hello 1\n{"a":1}\n{\n  "files": [\n    "a.ts"\n  ],\n  "n": 2\n}' },
    ]);
    expect(result.value).toEqual({ logs: ['hello 1', '{"a":1}'], value: { files: ['a.ts'], n: 2 } });
  });

  it('a string return value is shown as-is; no output at all says so', async () => {
    const s = setup(isolates);
    expect(textOf((await run(s, 'return "done"')).content)).toBe('done');
    const quiet = await run(s, 'const x: number = 1;');
    expect(quiet.content).toEqual([{ type: 'text', text: '(run_code completed with no output)' }]);
    expect(quiet.value).toEqual({ logs: [] });
  });

  it("a compile error names the model's own line", async () => {
    const s = setup(isolates);
    const result = await run(s, 'const a = 1;\nconst b = ;\nreturn a;');
    expect(result.ok).toBe(false);
    expect(textOf(result.content)).toMatch(
      /^Error: code run failed \(compile\): program\.ts:2:\d+: Unexpected ";"$/,
    );
    expect(result.error).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'compile' } });
  });

  it('a thrown error fails the call and shows the captured output after it', async () => {
    const s = setup(isolates);
    const result = await run(s, 'console.log("step 1");\nthrow new Error("bad input");');
    expect(result.ok).toBe(false);
    const text = textOf(result.content);
    expect(text).toMatch(/^Error: code run failed \(runtime\): Error: bad input\n/);
    expect(text).toMatch(/program\.ts:2/);
    expect(text.endsWith('\nCaptured output:\nstep 1')).toBe(true);
    expect(result.error).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'runtime' } });
    await s.log.flush();
    const logged = (await s.log.list(agent.sessionId)).find(
      (e) => e.type === 'tool.result' && e.callId === result.id,
    );
    expect(logged?.data).toMatchObject({ error: { code: 'CODE_RUN_FAILED', data: { kind: 'runtime' } } });
  });

  it('an inner call still running when its program ends is cancelled', async () => {
    let sawAbort: Promise<boolean> = Promise.resolve(false);
    const slow = defineTool({
      name: 'slow',
      description: 'Waits until cancelled (at most 5 s).',
      parameters: v.object({}),
      output: { schema: v.string() },
      execute: (_args, exec) => {
        sawAbort = new Promise((resolve) => {
          const timer = setTimeout(() => resolve(false), 5000);
          exec.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve(true);
          });
        });
        return sawAbort.then(() => 'done');
      },
    });
    const s = setup(isolates);
    s.preset.register(slow);
    const result = await run(s, 'tools.slow({}); return "left early";');
    expect(textOf(result.content)).toBe('left early');
    // Cancelled either while running (its body saw the abort) or before it started: a call starts
    // only once the log has recorded it, and the program may have ended by then.
    const inner = await until(
      async () =>
        (await s.log.list(agent.sessionId)).find(
          (e) => e.type === 'tool.result' && (e.data as { name?: string }).name === 'slow',
        ),
      { what: "the inner call's result" },
    );
    const code = (inner.data as { error?: { code?: string } }).error?.code;
    expect(['ABORTED', 'ABORTED_BEFORE_DISPATCH']).toContain(code);
    if (code === 'ABORTED') expect(await sawAbort).toBe(true);
  });

  it('a failing inner call is an error the program can catch, with code and message', async () => {
    const s = setup(isolates);
    s.scope.register(missing);
    const result = await run(
      s,
      'try { await tools.read({ path: "/x" }); } catch (e) { return [e.name, e.code, e.message]; }',
    );
    expect(result.value).toEqual({
      logs: [],
      value: ['ToolError', 'FILE_NOT_FOUND', '/x does not exist; list the directory first.'],
    });
  });

  it('an inner call denied by policy reaches the program as DENIED and the outer result still renders', async () => {
    const s = setup(isolates);
    const grep = sleeper('grep', true, 1);
    s.scope.register(grep.definition);
    s.scope.on('tools/pre-execute', (call) =>
      call.name === 'grep' ? { kind: 'deny', reason: 'grep is off for this agent' } : undefined,
    );
    const result = await run(
      s,
      'try { await tools.grep({ key: "k" }); } catch (e) { console.log(e.code + ": " + e.message); }\nreturn "after";',
    );
    expect(result.ok).toBe(true);
    expect(textOf(result.content)).toBe('DENIED: grep is off for this agent\nafter');
    expect(grep.stats.calls).toBe(0);
  });

  it('a tool without a canonical value gives the program its text content', async () => {
    const s = setup(isolates);
    s.scope.register(
      defineTool({
        name: 'touch',
        description: 'Touch a file.',
        parameters: v.object({}),
        output: { schema: v.undefined(), render: () => [{ type: 'text', text: 'touched' }] },
        execute: () => undefined,
      }),
    );
    const result = await run(s, 'return await tools.touch({});');
    expect(result.value).toEqual({ logs: [], value: 'touched' });
  });

  it('invalid arguments to a binding are caught like any tool error', async () => {
    const s = setup(isolates);
    s.scope.register(sleeper('grep', true, 1).definition);
    const result = await run(s, 'try { await tools.grep({ key: 5 } as any); } catch (e) { return e.code; }');
    expect(result.value).toEqual({ logs: [], value: 'INVALID_ARGUMENTS' });
  });

  it('concurrency-safe calls under Promise.all overlap; exclusive ones run one at a time', async () => {
    const s = setup(isolates);
    const safe = sleeper('search', true, 80);
    const exclusive = sleeper('write', false, 40);
    s.scope.register(safe.definition);
    s.scope.register(exclusive.definition);
    const result = await run(
      s,
      'const a = await Promise.all([tools.search({ key: "a" }), tools.search({ key: "b" }), tools.search({ key: "c" })]);\n' +
        'const b = await Promise.all([tools.write({ key: "x" }), tools.write({ key: "y" })]);\nreturn [...a, ...b];',
    );
    expect(result.value).toEqual({ logs: [], value: ['a', 'b', 'c', 'x', 'y'] });
    expect(safe.stats.maxInFlight).toBe(3);
    expect(exclusive.stats.maxInFlight).toBe(1);
    expect(exclusive.stats.calls).toBe(2);
  });

  it('an inner call is validated and classified once, by the pipeline that schedules it', async () => {
    const s = setup(isolates);
    let validated = 0;
    let classified = 0;
    const probe = defineTool({
      name: 'probe',
      description: 'Counts how often its arguments are checked and classified.',
      parameters: v.object({ key: v.string() }),
      output: { schema: v.string() },
      isConcurrencySafe: () => ++classified > 0,
      execute: (args) => args.key,
    });
    s.scope.register({
      ...probe,
      validateArguments: (args: unknown) => {
        validated++;
        return probe.validateArguments(args);
      },
    });
    const result = await run(
      s,
      'return await Promise.all([tools.probe({ key: "a" }), tools.probe({ key: "b" }), tools.probe({ key: "c" })]);',
    );
    expect(result.value).toEqual({ logs: [], value: ['a', 'b', 'c'] });
    expect([validated, classified]).toEqual([3, 3]);
  });

  it('an image-bearing sub-result is appended after the outer result, attributed to its call', async () => {
    const s = setup(isolates);
    s.scope.register(screenshot);
    s.scope.register(sleeper('grep', true, 1).definition);
    const result = await run(
      s,
      'await tools.grep({ key: "k" });\nconst shot = await tools.screenshot({ page: "home" });\nconsole.log(shot.bytes);\nreturn "ok";',
    );
    expect(result.ok).toBe(true);
    expect(result.content).toEqual([
      { type: 'text', text: '4\nok' },
      { type: 'text', text: 'Image from screenshot (call 2):' },
      { type: 'image', data: 'PNG:home', mimeType: 'image/png' },
    ]);
    // The canonical value stays free of image bytes.
    expect(JSON.stringify(result.value)).not.toContain('PNG:');
  });

  it('images are not appended when the run fails', async () => {
    const s = setup(isolates);
    s.scope.register(screenshot);
    const result = await run(s, 'await tools.screenshot({ page: "home" });\nthrow new Error("later");');
    expect(result.ok).toBe(false);
    expect(result.content.every((p) => p.type === 'text')).toBe(true);
  });

  it('inner calls are log-only events linked to the run_code call', async () => {
    const s = setup(isolates);
    s.scope.register(sleeper('grep', true, 1).definition);
    s.scope.register(missing);
    await run(
      s,
      'await tools.grep({ key: "k" });\ntry { await tools.read({ path: "/y" }); } catch {}\nreturn 1;',
      'outer-7',
    );
    const events = (await s.log.list(agent.sessionId)).map((e) => [
      e.type,
      e.surface,
      e.callId,
      e.parentCallId ?? null,
      (e.data as { name: string }).name,
    ]);
    expect(events).toEqual([
      ['tool.call', 'current', 'outer-7', null, 'run_code'],
      ['tool.call', 'log-only', 'outer-7.1', 'outer-7', 'grep'],
      ['tool.result', 'log-only', 'outer-7.1', 'outer-7', 'grep'],
      ['tool.call', 'log-only', 'outer-7.2', 'outer-7', 'read'],
      ['tool.result', 'log-only', 'outer-7.2', 'outer-7', 'read'],
      ['tool.result', 'current', 'outer-7', null, 'run_code'],
    ]);
    expect((await s.log.list(agent.sessionId))[0]?.data).toMatchObject({
      arguments: { description: 'test program' },
    });
  });

  it('a policy denying run_code stops the program before it runs', async () => {
    const s = setup(isolates);
    const grep = sleeper('grep', true, 1);
    s.scope.register(grep.definition);
    s.scope.on('tools/pre-execute', (call) =>
      call.name === 'run_code'
        ? { kind: 'deny', reason: 'Programs are disabled; call tools directly.' }
        : undefined,
    );
    const result = await run(s, 'console.log("ran"); await tools.grep({ key: "k" });');
    expect(result).toMatchObject({ ok: false, error: { code: 'DENIED' } });
    expect(result.content).toEqual([
      { type: 'text', text: 'Error: Programs are disabled; call tools directly.' },
    ]);
    expect(grep.stats.calls).toBe(0);
  });

  it("a tool outside the agent's set has no binding", async () => {
    const s = setup(isolates);
    s.preset.register(sleeper('grep', true, 1).definition);
    s.scope.restrict({ deny: ['grep'] });
    const result = await run(s, 'return typeof tools.grep;');
    expect(result.value).toEqual({ logs: [], value: 'undefined' });
  });

  it('in both mode native calls and programs share one batch', async () => {
    const s = setup(isolates);
    s.scope.register(sleeper('grep', true, 1).definition);
    const results = await s.scope.execute(
      [
        { id: 'n1', name: 'grep', arguments: { key: 'native' } },
        program('p2', 'return await tools.grep({ key: "coded" });'),
      ],
      { agent, mode: 'both' },
    );
    expect(results.map((r) => [r.id, textOf(r.content)])).toEqual([
      ['n1', 'native'],
      ['p2', 'coded'],
    ]);
  });

  it('a program over its deadline fails as timeout with what it printed so far', async () => {
    const s = setup(isolates, { limits: { wallMs: 300 } });
    const result = await run(s, 'console.log("spinning");\nwhile (true) {}');
    expect(textOf(result.content)).toMatch(
      /^Error: code run failed \(timeout\): .+\nCaptured output:\nspinning$/s,
    );
    expect(result.error).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'timeout' } });
  });

  it('cancelling the batch ends a running program as aborted', async () => {
    const s = setup(isolates);
    const slow = sleeper('slow', true, 5_000);
    s.scope.register(slow.definition);
    const controller = new AbortController();
    const running = s.scope.execute([program('p9', 'await tools.slow({ key: "k" });\nreturn "never";')], {
      agent,
      mode: 'code',
      signal: controller.signal,
    });
    await until(() => slow.stats.calls > 0);
    controller.abort();
    const [result] = await running;
    expect(result?.ok).toBe(false);
    expect(textOf(result?.content ?? [])).toMatch(/^Error: code run failed \(aborted\): /);
  });
});
