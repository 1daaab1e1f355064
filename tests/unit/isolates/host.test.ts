// The isolate host end to end with real worker processes: values, logs, globals, the call bridge,
// concurrency of calls, errors on both sides, error positions, abort, and shutdown.
import ivm from 'isolated-vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import type { IsolateHost, JsonValue } from '../../../host/isolates/index.ts';
import { until } from '../../helpers/until.ts';
import { alive, echo, failure, runner, sleep, startHost, value } from './helpers.ts';

let host: IsolateHost;
const run = runner(() => host);

beforeAll(async () => {
  host = await startHost({ workers: 1 });
});
afterAll(async () => {
  const pids = host.workerPids();
  await host.close();
  // Closing ends the worker processes: nothing is left behind.
  expect(pids.length).toBeGreaterThan(0);
  await until(() => !pids.some(alive), { what: 'the workers to exit' });
});

describe('running programs', () => {
  it('returns values and captured console lines', async () => {
    const outcome = await run({
      code: 'console.log("a", 1, { b: [2] }); console.error("e"); return { ok: true }',
    });
    expect(outcome).toMatchObject({ ok: true, value: { ok: true }, logs: ['a 1 {"b":[2]}', 'e'] });
  });

  it('strips TypeScript types and runs top-level await', async () => {
    const outcome = await run({
      code: 'interface P { x: number }\nconst p: P = { x: 2 };\nconst r = await Promise.resolve(p.x as number);\nreturn r * 21',
    });
    expect(value(outcome)).toBe(42);
  });

  it('returns undefined when the program returns nothing', async () => {
    expect(await run({ code: 'const a = 1;' })).toMatchObject({ ok: true, value: undefined, logs: [] });
  });

  it('copies globals in as JSON', async () => {
    const outcome = await run({
      code: 'return args.items.length + args.name',
      globals: { args: { items: [1, 2], name: 'x' } },
    });
    expect(value(outcome)).toBe('2x');
  });

  it('gives every run a fresh context: nothing a program leaves behind is seen by the next', async () => {
    expect(
      value(await run({ code: 'globalThis.leftover = 7; Object.prototype.polluted = 1; return 1' })),
    ).toBe(1);
    expect(value(await run({ code: 'return [typeof leftover, ({}).polluted]' }))).toEqual([
      'undefined',
      null,
    ]);
  });

  it('shows a program the standard globals and console only: the prelude and its warm-up leave nothing', async () => {
    const bare = new ivm.Isolate({ memoryLimit: 16 });
    const standard = (await (
      await bare.createContext()
    ).eval('JSON.stringify(Object.getOwnPropertyNames(globalThis))', { copy: true })) as string;
    bare.dispose();
    // FinalizationRegistry: its callbacks could resume a program after the worker saw it stalled.
    const deleted = ['WebAssembly', 'SharedArrayBuffer', 'Atomics', 'FinalizationRegistry'];
    const names = (JSON.parse(standard) as string[]).filter((name) => !deleted.includes(name));
    const expected = [...new Set([...names, 'console'])].sort();
    const seen = await run({ code: 'return Object.getOwnPropertyNames(globalThis).sort()' });
    expect(value(seen)).toEqual(expected);
  });

  it('settles many calls of one tick with their own results (batched frames both ways)', async () => {
    const outcome = await run({
      code: 'const r = await Promise.all(Array.from({ length: 300 }, (_, i) => tools.echo({ i })));\nreturn r.every((x, i) => x.args.i === i) && r.length',
      limits: { maxInFlight: 64 },
    });
    expect(value(outcome)).toBe(300);
  });

  it('runs back to back each in an isolate of its own', async () => {
    const codes = Array.from(
      { length: 12 },
      (_, i) => `const seen = globalThis.mark; globalThis.mark = ${i}; return seen`,
    );
    for (const code of codes) expect(value(await run({ code }))).toBeUndefined();
    const together = await Promise.all(codes.map((code) => run({ code })));
    for (const outcome of together) expect(value(outcome)).toBeUndefined();
  });

  it('keeps the function shape even when the body closes the wrapper', async () => {
    const outcome = await run({ code: 'return 1;\n}\nglobalThis.pwned = 1;\n{' });
    expect(outcome.ok).toBe(true);
    expect(value(await run({ code: 'return typeof pwned' }))).toBe('undefined');
  });
});

describe('the call bridge', () => {
  it('brokers tools.<name>(args) to onCall with plain JSON and returns the result', async () => {
    const seen: Array<[string, JsonValue]> = [];
    const outcome = await run({
      code: 'const a = await tools.echo({ q: "x", n: [1, 2] }); const b = await tools.other(); return [a, b]',
      bindings: ['echo', 'other'],
      onCall: async (name, args) => {
        seen.push([name, args]);
        return name === 'echo' ? { got: args } : null;
      },
    });
    expect(value(outcome)).toEqual([{ got: { q: 'x', n: [1, 2] } }, null]);
    expect(seen).toEqual([
      ['echo', { q: 'x', n: [1, 2] }],
      ['other', {}],
    ]);
    expect(outcome.stats.calls).toBe(2);
  });

  it('exposes only the given bindings, as a frozen object', async () => {
    const outcome = await run({
      code: 'tools.echo2 = 1; return [Object.keys(tools), typeof tools.nope, Object.isFrozen(tools), Object.isFrozen(tools.echo)]',
      bindings: ['echo', 'list'],
    });
    expect(value(outcome)).toEqual([['echo', 'list'], 'undefined', true, true]);
  });

  it('hands every call to onCall as the program makes it: which calls overlap is for onCall to decide', async () => {
    let inFlight = 0;
    let peak = 0;
    const seen: JsonValue[] = [];
    // Each call holds until all four are in at once (or 2 s passed: then the peak shows how many were).
    let allIn = (): void => undefined;
    const met = new Promise<void>((resolve) => (allIn = resolve));
    const guard = setTimeout(allIn, 2_000);
    const outcome = await run({
      code: 'return await Promise.all([1, 2, 3, 4].map((i) => tools.write({ i })))',
      bindings: ['write'],
      onCall: async (_name, args) => {
        seen.push(args);
        peak = Math.max(peak, ++inFlight);
        if (inFlight === 4) allIn();
        await met;
        inFlight--;
        return args;
      },
    });
    clearTimeout(guard);
    expect(value(outcome)).toEqual([{ i: 1 }, { i: 2 }, { i: 3 }, { i: 4 }]);
    expect(seen).toEqual([{ i: 1 }, { i: 2 }, { i: 3 }, { i: 4 }]);
    expect(peak).toBe(4);
    expect(outcome.stats.maxInFlight).toBe(4);
  });

  it('bounds pending calls by maxInFlight; the others reach onCall in the order they were made', async () => {
    let inFlight = 0;
    let peak = 0;
    const seen: number[] = [];
    const outcome = await run({
      code: 'return (await Promise.all(Array.from({ length: 20 }, (_, i) => tools.echo({ i })))).length',
      limits: { maxInFlight: 3 },
      onCall: async (_name, args) => {
        seen.push((args as { i: number }).i);
        peak = Math.max(peak, ++inFlight);
        await sleep(5);
        inFlight--;
        return args;
      },
    });
    expect(value(outcome)).toBe(20);
    expect(peak).toBe(3);
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('rebuilds a failed call as a catchable error with the code and message', async () => {
    const outcome = await run({
      code: 'try { await tools.echo({}); } catch (e) { return [e instanceof Error, e.name, e.code, e.message]; }',
      onCall: async () => {
        throw new SandboxError('DENIED', 'writes to /etc are not allowed');
      },
    });
    expect(value(outcome)).toEqual([true, 'ToolError', 'DENIED', 'writes to /etc are not allowed']);
    const plain = await run({
      code: 'try { await tools.echo({}); } catch (e) { return e.code + " " + e.message; }',
      onCall: async () => {
        throw new TypeError('boom');
      },
    });
    expect(value(plain)).toBe('TOOL_FAILED boom');
  });

  it('fails the run when a call error is not caught', async () => {
    const outcome = await run({
      code: 'await tools.echo({});\nreturn 1',
      onCall: async () => {
        throw new SandboxError('DENIED', 'nope');
      },
    });
    expect(failure(outcome)).toEqual({ kind: 'runtime', message: 'ToolError: nope\n    at program.ts:1:1' });
  });

  it('rejects arguments that are not JSON inside the program', async () => {
    const outcome = await run({
      code: 'const a = {}; a.self = a; try { await tools.echo(a) } catch (e) { return e.message }',
    });
    expect(value(outcome)).toMatch(/^tools\.echo: arguments are not JSON-serialisable/);
  });
});

describe('errors point at the model’s own code', () => {
  it('reports syntax errors as compile with the model’s line and column', async () => {
    const outcome = await run({ code: 'const a: number = 1;\nconst b = a +* 2;\nreturn b' });
    expect(failure(outcome)).toEqual({ kind: 'compile', message: 'program.ts:2:14: Unexpected "*"' });
    expect(failure(await run({ code: 'if (true) {\n  return 1' }))).toEqual({
      kind: 'compile',
      message: 'program.ts:2:11: Unexpected end of code',
    });
  });

  it('maps runtime stack frames through the sourcemap and drops everything else', async () => {
    const code = [
      'type Row = { id: number };',
      '',
      'function check(row: Row): number {',
      "  if (row.id > 1) throw new RangeError('bad id ' + row.id);",
      '  return row.id;',
      '}',
      'const rows: Row[] = [{ id: 1 }, { id: 2 }];',
      'return rows.map(check);',
    ].join('\n');
    const { kind, message } = failure(await run({ code }));
    expect(kind).toBe('runtime');
    expect(message.split('\n')).toEqual([
      'RangeError: bad id 2',
      '    at check (program.ts:4:25)',
      '    at program.ts:8:13',
    ]);
    expect(message).not.toMatch(/isolated-vm|prelude|\/work\/|node:/);
  });

  it('reports thrown non-errors', async () => {
    expect(failure(await run({ code: 'throw { reason: "x" }' }))).toEqual({
      kind: 'runtime',
      message: 'Error: Uncaught {"reason":"x"}',
    });
  });
});

describe('cancellation and limits from the caller', () => {
  it('aborts a waiting run and the signal of its in-flight call', async () => {
    const controller = new AbortController();
    let callSignal: AbortSignal | undefined;
    const pending = run({
      code: 'await tools.echo({}); return 1',
      signal: controller.signal,
      onCall: (_n, _a, signal) => {
        callSignal = signal;
        return new Promise(() => undefined);
      },
    });
    await until(() => callSignal, { what: 'the call' });
    controller.abort();
    expect(failure(await pending).kind).toBe('aborted');
    expect(callSignal?.aborted).toBe(true);
    expect(value(await run({ code: 'return "still fine"' }))).toBe('still fine');
  });

  it('refuses code over the size cap before compiling it', async () => {
    const outcome = await run({ code: `return ${'1+'.repeat(600)}1`, limits: { maxCodeBytes: 1000 } });
    expect(failure(outcome)).toEqual({
      kind: 'limit',
      message: 'the code is 1208 bytes, over the 1000-byte limit',
    });
  });

  it('refuses globals that would shadow tools, console or a builtin', async () => {
    for (const name of ['tools', 'console', 'JSON', 'Object']) {
      expect(failure(await run({ code: 'return 1', globals: { [name]: 1 } })).kind).toBe('limit');
    }
  });

  it('fails runs after close as aborted', async () => {
    const other = await startHost({ workers: 1, prewarm: 0 });
    await other.close();
    expect(failure(await other.run({ code: 'return 1', bindings: [], onCall: echo })).kind).toBe('aborted');
  });
});
