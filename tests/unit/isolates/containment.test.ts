// Programs that try to reach the host through the published carriers of sandbox escapes
// (constructor chains, CallSites, Proxies and thenables handed to the host, inspect.custom,
// module loaders, WebAssembly, shared memory). Each must find nothing but its own isolate: plain data
// is all that ever reaches onCall or the outcome, and no host path or object shows up anywhere.
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IsolateHost, JsonValue } from '../../../host/isolates/index.ts';
import { failure, runner, startHost, value } from './helpers.ts';

const HOST_TRACES = /\/work\/|node_modules|node:|isolated-vm|file:\/\//;
const isPlain = (v: unknown): boolean =>
  v === null ||
  ['string', 'number', 'boolean'].includes(typeof v) ||
  (Array.isArray(v) && v.every(isPlain)) ||
  (typeof v === 'object' &&
    Object.getPrototypeOf(v) === Object.prototype &&
    Object.values(v as object).every(isPlain));

// Both ways into an isolate: inline on the worker's thread (a run alone on one of two workers) and
// queued on isolated-vm's thread pool (one worker: never inline).
describe.each([
  { mode: 'inline', workers: 2 },
  { mode: 'queued', workers: 1 },
])('the isolate reaches nothing of the host ($mode entries)', ({ mode, workers }) => {
  let host: IsolateHost;
  const run = runner(() => host);
  beforeAll(async () => {
    host = await startHost({ workers });
  });
  afterAll(() => host.close());

  it('has only the ECMAScript builtins and console as globals', async () => {
    const outcome = await run({ code: 'return Object.getOwnPropertyNames(globalThis)' });
    expect(outcome.stats.inline).toBe(mode === 'inline');
    const names = value(outcome) as string[];
    const builtins = new Set(runInNewContext('Object.getOwnPropertyNames(globalThis)') as string[]);
    expect(names.filter((name) => !builtins.has(name))).toEqual([]);
    expect(names).toContain('console');
    for (const name of [
      'process',
      'require',
      'module',
      'Buffer',
      'fetch',
      'setTimeout',
      'WebAssembly',
      'SharedArrayBuffer',
      'Atomics',
    ]) {
      expect(names).not.toContain(name);
    }
  });

  it('finds no process through constructor chains', async () => {
    const code = `
      const probes = [];
      const tryIt = (f) => { try { probes.push(String(f())); } catch (e) { probes.push('threw ' + e.name); } };
      tryIt(() => this.constructor.constructor('return typeof process')());
      tryIt(() => tools.echo.constructor.constructor('return typeof process')());
      tryIt(() => console.log.constructor('return typeof require + typeof module')());
      tryIt(() => Object.getOwnPropertyNames(tools.echo.constructor('return globalThis')()).includes('process'));
      tryIt(() => (async () => {}).constructor('return this')() instanceof Promise);
      return probes;`;
    expect(value(await run({ code }))).toEqual([
      'undefined',
      'undefined',
      'undefinedundefined',
      'false',
      'true',
    ]);
  });

  it('gets no bridge function or host frame through CallSites', async () => {
    const code = `
      Error.prepareStackTrace = (_e, sites) => sites.map((s) => [String(s.getFileName()), typeof s.getFunction(), typeof s.getThis(), s.isEval()]);
      const inside = new Error().stack;
      let fromTool;
      try { await tools.echo({}); } catch (e) { fromTool = e.stack; }
      return { inside, fromTool };`;
    const result = value(
      await run({
        code,
        onCall: async () => {
          throw new Error(`failed at ${import.meta.url}`);
        },
      }),
    ) as { inside: Array<[string, string, string, boolean]>; fromTool: unknown };
    expect(result.inside.some(([file]) => file === 'sandbox:///prelude.js')).toBe(true);
    for (const [file, fn, self, isProgram] of result.inside) {
      expect(file).toMatch(/^(undefined|sandbox:\/\/\/prelude\.js)$/);
      // Only the program's own (eval-built) frames show a function; the strict prelude gives away
      // neither its functions nor their receivers.
      if (!isProgram) expect([fn, self]).toEqual(['undefined', 'undefined']);
    }
    expect(JSON.stringify(result.fromTool)).not.toMatch(/\/work\/main\/host|file:/);
  });

  it('hands the host only plain copies of Proxies, thenables, getters and inspect.custom objects', async () => {
    const received: JsonValue[] = [];
    const code = `
      const custom = { [Symbol.for('nodejs.util.inspect.custom')]() { return globalThis; }, shown: 1 };
      const proxy = new Proxy({ a: 1 }, { get: (t, k) => (k === 'toJSON' ? undefined : t[k]) });
      const thenable = { then(resolve) { resolve({ via: 'then' }); } };
      const getter = { get g() { return 'computed'; } };
      await tools.echo({ custom, proxy, getter });
      console.log(custom);
      const r = await tools.echo(thenable);
      return { r, proxy, custom, later: thenable };`;
    const outcome = await run({
      code,
      onCall: async (_name, args) => {
        received.push(args);
        return args;
      },
    });
    expect(outcome.ok).toBe(true);
    expect(received[0]).toEqual({ custom: { shown: 1 }, proxy: { a: 1 }, getter: { g: 'computed' } });
    for (const item of received) expect(isPlain(item)).toBe(true);
    expect(isPlain(value(outcome))).toBe(true);
    expect(outcome.logs).toEqual(['{"shown":1}']);
  });

  it('cannot load modules with import() or require', async () => {
    const code = `
      let dyn; try { await import('node:fs'); dyn = 'loaded'; } catch (e) { dyn = e.message; }
      let req; try { require('fs'); req = 'loaded'; } catch (e) { req = e.name; }
      return [dyn, req];`;
    const [dyn, req] = value(await run({ code })) as string[];
    expect(dyn).not.toBe('loaded');
    expect(req).toBe('ReferenceError');
  });

  it('has no WebAssembly, SharedArrayBuffer or Atomics to block or allocate outside the heap', async () => {
    const code = `return [typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics, typeof globalThis.Atomics?.wait]`;
    expect(value(await run({ code }))).toEqual(['undefined', 'undefined', 'undefined', 'undefined']);
  });

  it('keeps bridge sizes and codes honest when the program replaces JSON and Promise', async () => {
    const received: JsonValue[] = [];
    const code = `
      JSON.stringify = () => '{"forged":true}';
      JSON.parse = () => ({ forged: true });
      Promise.prototype.then = function () { throw new Error('hijacked'); };
      const r = await tools.echo({ real: 1 });
      return 1;`;
    const outcome = await run({
      code,
      onCall: async (_n, args) => {
        received.push(args);
        return args;
      },
    });
    expect(received).toEqual([{ real: 1 }]);
    // Whatever the program did to its own realm only changes its own result, never the host's view.
    if (!outcome.ok) expect(outcome.message).not.toMatch(HOST_TRACES);
  });

  it('never shows host paths or isolate internals in any message', async () => {
    const codes = ['null.x', 'throw new Error("x")', 'await import("x")', 'undefinedFn()', 'return 1 +'];
    for (const code of codes) {
      const { message } = failure(await run({ code }));
      expect(message).not.toMatch(HOST_TRACES);
    }
  });
});
