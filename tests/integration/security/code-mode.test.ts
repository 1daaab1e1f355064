// A hostile program in run_code, through the public API. Guarantees: the program reaches nothing
// but the tools.* bridge (no fs, network, process, host timers or host objects); each tools.* call
// is policed exactly like the same direct call (deny denies, ask asks); floods and memory bombs
// end in a bounded error of that run only, while another tenant's concurrent run succeeds and the
// API process keeps serving; errors never carry host paths or host stack frames.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Harness, type Loose, startHarness, text } from './harness.ts';

let h: Harness;
let codeA: string;
let codeB: string;

const run = async (key: string, agent: string, code: string, id = 'p'): Promise<Loose> => {
  const [r] = await h.calls(key, agent, [[id, 'run_code', { code, description: 'probe' }]]);
  return r;
};

const pendingOf = async (agentId: string): Promise<Loose> => {
  for (let i = 0; i < 500; i++) {
    const res = await h.http(h.keyA, 'GET', `/v1/agents/${agentId}/requests?state=pending`);
    if (res.json.requests.length > 0) return res.json.requests[0];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no pending request');
};

const HOST_LEAKS = [
  /\/work\//,
  /node_modules/,
  /host\/isolates/,
  /\b(?!program\.ts)[\w-]+\.[cm]?[jt]s:\d+/,
  /at .*\(node:/,
  /isolated-vm/,
];

beforeAll(async () => {
  // Programs spin for 3 s of CPU, not the default 10: six of them cost the test's two cores 18 s
  // instead of a minute, which on a loaded machine ran past the test's timeout.
  h = await startHarness({ isolateWorkers: 2, config: { codeCpuMs: 3000 } });
  codeA = await h.agent(h.keyA, { preset: 'code' });
  codeB = await h.agent(h.keyB, { preset: 'code' });
});

afterAll(async () => {
  await h?.close();
});

describe('code mode (run_code) as an attacker', () => {
  it('a program reaches no fs, network, process, module loader or host timers', async () => {
    const r = await run(
      h.keyA,
      codeA,
      `
      const probe = {};
      for (const name of ['require', 'process', 'module', 'Buffer', 'fetch', 'XMLHttpRequest', 'WebSocket',
        'setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask_host', 'Deno', 'Bun', 'ivm', '_ivm',
        'SharedArrayBuffer', 'Atomics', 'WebAssembly_instantiateStreaming']) {
        probe[name] = typeof globalThis[name];
      }
      const attempts = {};
      const tryIt = async (label, f) => { try { const v = await f(); attempts[label] = 'got ' + typeof v + ' ' + String(v).slice(0, 40); } catch (e) { attempts[label] = 'threw'; } };
      await tryIt('import-fs', () => import('fs'));
      await tryIt('import-node-fs', () => import('node:fs'));
      await tryIt('ctor-process', () => (function(){}).constructor('return process')());
      await tryIt('ctor-require', () => (function(){}).constructor('return require')());
      await tryIt('tools-ctor-process', () => tools.bash.constructor('return process')());
      await tryIt('proto-process', () => Object.getPrototypeOf(tools).constructor.constructor('return process')());
      await tryIt('stack-callsite', () => {
        Error.prepareStackTrace = (_, cs) => cs.map((c) => { const t = c.getThis(); return t && t.process ? 'HOST' : typeof t; });
        const s = new Error().stack; Error.prepareStackTrace = undefined; return JSON.stringify(s);
      });
      return { probe, attempts, keys: Object.getOwnPropertyNames(globalThis).filter((k) => /^[a-z_$]/.test(k)) };`,
    );
    expect(r.ok, text(r)).toBe(true);
    const out = JSON.parse(text(r).slice(text(r).indexOf('{')));
    for (const name of [
      'require',
      'process',
      'module',
      'Buffer',
      'fetch',
      'XMLHttpRequest',
      'WebSocket',
      'Deno',
      'Bun',
      'ivm',
      '_ivm',
    ])
      expect(out.probe[name], name).toBe('undefined');
    for (const name of ['setTimeout', 'setInterval', 'setImmediate'])
      expect(['undefined', 'function']).toContain(out.probe[name]);
    expect(out.attempts['import-fs']).toBe('threw');
    expect(out.attempts['import-node-fs']).toBe('threw');
    for (const label of ['ctor-process', 'ctor-require', 'tools-ctor-process', 'proto-process'])
      expect(out.attempts[label], label).toMatch(/^(threw|got undefined)/);
    expect(out.attempts['stack-callsite']).not.toContain('HOST');
    expect(out.keys).not.toContain('process');
    expect(out.keys).not.toContain('require');
  });

  it('a program that can never finish ends at once as stalled, not at the 10-minute wall clock', async () => {
    // The service's default wall clock (10 minutes): ending within this test's timeout is ending early.
    const [r] = await h.calls(h.keyA, codeA, [
      [
        'hung',
        'run_code',
        {
          code: 'console.log("waiting"); await new Promise(() => {}); return "never";',
          description: 'probe',
        },
      ],
    ]);
    expect(r.ok).toBe(false);
    expect(r.error).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'stalled' } });
    expect(text(r)).toBe(
      'Error: code run failed (stalled): the program awaits a promise that nothing can settle (no tool ' +
        'call of it is pending, and programs have no timers or other events), so it would never finish' +
        '\nCaptured output:\nwaiting',
    );
  });

  it('programs that wait on a slow command or on a chain its results settle still complete', async () => {
    // `sleep` in the sandbox stands for a timer: code mode has none, a program waits on a tool.
    const slow = await run(
      h.keyA,
      codeA,
      `const r = await tools.bash({ command: 'sleep 1; echo slept', description: 'wait' });
       return JSON.stringify(r).includes('slept') ? 'waited' : JSON.stringify(r);`,
      'slow',
    );
    expect(text(slow)).toBe('waited');
    const chained = await run(
      h.keyA,
      codeA,
      `let done;
       const gate = new Promise((resolve) => { done = resolve; });
       tools.bash({ command: 'sleep 1; echo one', description: 'first' })
         .then(() => tools.bash({ command: 'echo two', description: 'second' }))
         .then((r) => done(JSON.stringify(r).includes('two') ? 'chained' : JSON.stringify(r)));
       return await gate;`,
      'chain',
    );
    expect(text(chained)).toBe('chained');
  });

  it('a deny rule on bash blocks tools.bash exactly like a direct bash call', async () => {
    const agent = await h.agent(h.keyA, { preset: 'code', policy: { deny: ['bash'] } });
    const r = await run(
      h.keyA,
      agent,
      `try { await tools.bash({ command: 'echo ran > /workspace/ran.txt', description: 'x' }); return 'RAN'; }
       catch (e) { return 'blocked: ' + e.message; }`,
    );
    expect(text(r)).toContain('blocked');
    expect(text(r)).not.toContain('RAN');
    const events = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/events`);
    const inner = events.json.events.filter((e: Loose) => e.parentCallId === 'p' && e.type === 'tool.result');
    expect(inner.map((e: Loose) => e.data.error?.code)).toEqual(['DENIED']);
    const check = await run(h.keyA, agent, `return await tools.glob({ pattern: 'ran.txt' });`, 'c');
    expect(text(check)).not.toContain('ran.txt');
  });

  it('a deny rule with an argument condition is applied to tools.* arguments too', async () => {
    const agent = await h.agent(h.keyA, {
      preset: 'code',
      policy: { rules: [{ tool: 'write', when: { file_path: 'secret' }, decision: 'deny' }] },
    });
    const r = await run(
      h.keyA,
      agent,
      `const out = [];
       for (const p of ['ok.txt', 'secret.txt', './secret.txt']) {
         try { await tools.write({ file_path: p, content: 'x' }); out.push(p + ':written'); }
         catch (e) { out.push(p + ':denied'); }
       }
       return out.join(',');`,
    );
    expect(text(r)).toContain('ok.txt:written,secret.txt:denied,./secret.txt:denied');
  });

  it('an ask rule asks for tools.* calls: denied means not run, allowed means run', async () => {
    const agent = await h.agent(h.keyA, { preset: 'code', policy: { ask: ['write'] } });
    const pending = run(
      h.keyA,
      agent,
      `const r = [];
       for (const f of ['first.txt', 'second.txt']) {
         try { await tools.write({ file_path: f, content: 'x' }); r.push(f + ':ok'); } catch (e) { r.push(f + ':' + e.message); }
       }
       return r.join('|');`,
    );
    const first = await pendingOf(agent);
    expect(first).toMatchObject({ kind: 'approval', payload: expect.objectContaining({}) });
    expect(JSON.stringify(first.payload)).toContain('first.txt');
    await h.http(h.keyA, 'POST', `/v1/agents/${agent}/requests/${first.id}`, { allow: false, reason: 'no' });
    let second: Loose;
    for (let i = 0; i < 200; i++) {
      second = await pendingOf(agent);
      if (second.id !== first.id) break;
    }
    expect(JSON.stringify(second.payload)).toContain('second.txt');
    await h.http(h.keyA, 'POST', `/v1/agents/${agent}/requests/${second.id}`, { allow: true });
    const r = await pending;
    expect(text(r)).toMatch(/first\.txt:[^|]*(denied|no)/i);
    expect(text(r)).toContain('second.txt:ok');
  });

  it("a call flood ends in a bounded error while another tenant's concurrent run succeeds", async () => {
    const flood = run(
      h.keyA,
      codeA,
      `await Promise.all(Array.from({ length: 200000 }, (_, i) => tools.glob({ pattern: 'x' + i }).catch(() => 0)));
       for (;;) await tools.glob({ pattern: 'y' });`,
      'flood',
    );
    const started = Date.now();
    const other = await run(
      h.keyB,
      codeB,
      `await tools.write({ file_path: 'b.txt', content: 'fine' }); return await tools.read({ file_path: 'b.txt' });`,
      'other',
    );
    expect(other.ok, text(other)).toBe(true);
    expect(text(other)).toContain('fine');
    // A starvation guard, not a speed claim: queued behind the flood, B would wait minutes.
    expect(Date.now() - started).toBeLessThan(30_000);
    const r = await flood;
    expect(r.ok).toBe(false);
    expect(text(r)).toMatch(/^Error: code run failed \((limit|timeout)\)/);
    expect(text(r).length).toBeLessThan(70_000);
  });

  it("a memory bomb ends in a bounded error while another tenant's concurrent run succeeds", async () => {
    const bomb = run(
      h.keyA,
      codeA,
      `const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random()));`,
      'mem',
    );
    const other = await run(h.keyB, codeB, 'return 6 * 7;', 'other2');
    expect(text(other)).toBe('42');
    const r = await bomb;
    expect(r.ok).toBe(false);
    expect(text(r)).toMatch(/^Error: code run failed \((memory|crash|timeout|limit)\)/);
  });

  it("a tenant saturating code mode with CPU-bound programs does not starve another tenant's run", async () => {
    let settled = 0;
    const flood = Array.from({ length: 6 }, (_, k) =>
      run(h.keyA, codeA, 'for (;;) {}', `spin${k}`)
        .catch((e: unknown) => String(e))
        .finally(() => settled++),
    );
    await until(
      async () =>
        (await h.server.store.events.list(codeA, { limit: 5000 })).filter(
          (e) => e.type === 'tool.call' && /^spin\d$/.test(e.callId ?? ''),
        ).length === 6,
      { what: "A's programs to be dispatched", timeoutMs: 30_000 },
    );
    expect(text(await run(h.keyB, codeB, 'return "b-served";', 'served'))).toBe('b-served');
    // B did not wait for any of A's programs, which each spin for their whole 3 s of CPU.
    expect(settled).toBe(0);
    for (const r of await Promise.all(flood)) expect(text(r as Loose)).toMatch(/code run failed \(timeout\)/);
  });

  it('the API process survives new Array(2**31).fill(0), and code mode keeps working afterwards', async () => {
    const r = await run(h.keyA, codeA, 'const a = new Array(2 ** 31).fill(0); return a.length;', 'huge');
    expect(r.ok).toBe(false);
    expect(text(r)).toMatch(/^Error: code run failed \((memory|crash|timeout|limit)\)/);
    expect((await h.http(undefined, 'GET', '/v1/health')).status).toBe(200);
    expect(text(await run(h.keyA, codeA, 'return "alive";', 'after'))).toBe('alive');
    expect(text(await run(h.keyB, codeB, 'return "alive-b";', 'after-b'))).toBe('alive-b');
  });

  it('errors from programs carry no host paths or host stack frames', async () => {
    const samples = [
      'throw new Error("boom")',
      'null.x',
      'syntax error here (',
      'await tools.read({ file_path: "/etc/passwd" })',
      'await tools.read({ file_path: "missing/file.txt" })',
      'await tools.nope({})',
      'return await tools.bash({ command: 1 })',
      '[...".".repeat(1e9)]',
    ];
    for (const [i, code] of samples.entries()) {
      const r = await run(h.keyA, codeA, code, `e${i}`);
      const all = JSON.stringify(r);
      for (const leak of HOST_LEAKS) expect(all, `${code}: ${all.slice(0, 400)}`).not.toMatch(leak);
    }
  });
});
