// Adversarial pass B: a hostile run_code program and a hostile stdio MCP server, through the public
// API with real containers and the real isolate host. What is tried here and not elsewhere: a
// program that pollutes the prototypes the prelude serialises its own error description with, and
// an MCP server (a program of the agent's, in its sandbox) that answers with wrong ids, twice,
// with hostile shapes and oversize lines, and floods the service with requests and notifications
// while never reading its input. Guarantee: each ends as a stable error of that call or run only,
// and the API process keeps serving the other tenant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Loose, startHarness, text } from './harness.ts';

/** A hostile stdio MCP server: each of its tools misbehaves one way (its name says which). */
const EVIL_SERVER = String.raw`// A hostile stdio MCP server (runs in the agent's sandbox as the agent).
const out = (m) => process.stdout.write(JSON.stringify(m) + '\n');
let buf = '';
const tools = ['wrongid', 'twice', 'hostile', 'nullblock', 'huge', 'pingflood', 'notifyflood', 'junkflood', 'bigflood', 'progress', 'deepstruct', 'garbage', 'ok'].map((name) => ({
  name, description: name, inputSchema: { type: 'object', properties: {} },
}));
const handle = (msg) => {
  if (msg.method === 'initialize')
    return out({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'evil', version: '1' } } });
  if (msg.method === 'tools/list') return out({ jsonrpc: '2.0', id: msg.id, result: { tools } });
  if (msg.method !== 'tools/call') return;
  const name = msg.params.name;
  const ok = (result) => out({ jsonrpc: '2.0', id: msg.id, result });
  switch (name) {
    case 'ok': return ok({ content: [{ type: 'text', text: 'fine' }] });
    case 'progress':
      // A well-behaved chatty server: 300 log notifications, then the answer.
      for (let i = 0; i < 300; i++) out({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'step ' + i } });
      return ok({ content: [{ type: 'text', text: 'progressed' }] });
    case 'wrongid':
      out({ jsonrpc: '2.0', id: msg.id + 1000, result: { content: [{ type: 'text', text: 'stray' }] } });
      out({ jsonrpc: '2.0', id: 'x' + msg.id, result: { content: [] } });
      out({ jsonrpc: '2.0', id: null, error: { code: -1, message: 'nothing' } });
      return; // never the right id
    case 'twice':
      ok({ content: [{ type: 'text', text: 'first' }] });
      return ok({ content: [{ type: 'text', text: 'second' }] });
    case 'hostile':
      return ok({ content: 'not-an-array', structuredContent: 'str', isError: 'yes', __proto__: { polluted: 1 } });
    case 'deepstruct':
      return ok({ content: [], structuredContent: JSON.parse('{"a":'.repeat(6000) + '1' + '}'.repeat(6000)) });
    case 'nullblock':
      return ok({ content: [null, { type: 'resource', resource: null }, { type: 'text' }] });
    case 'garbage':
      process.stdout.write('not json at all\n{"jsonrpc":"2.0"}\n[1,2,3]\n' + '{'.repeat(5000) + '\n');
      return ok({ content: [{ type: 'text', text: 'after garbage' }] });
    case 'huge':
      return ok({ content: [{ type: 'text', text: 'x'.repeat(3 * 1024 * 1024) }] });
    case 'pingflood': {
      // Requests to the client, as fast as stdout takes them; the server reads no more input.
      process.stdin.pause();
      let n = 0;
      const more = () => {
        let chunk = '';
        for (let i = 0; i < 2000; i++) chunk += JSON.stringify({ jsonrpc: '2.0', id: 'p' + n++, method: 'ping' }) + '\n';
        if (n >= Number(process.env.EVIL_PINGS ?? 400000)) return ok({ content: [{ type: 'text', text: 'pinged ' + n } ] });
        if (process.stdout.write(chunk)) setImmediate(more); else process.stdout.once('drain', more);
      };
      return more();
    }
    case 'junkflood': {
      let n = 0;
      const more = () => {
        const chunk = 'not json, a line a server logs\n'.repeat(2000);
        n += 2000;
        if (n >= 400000) return ok({ content: [{ type: 'text', text: 'junked ' + n }] });
        if (process.stdout.write(chunk)) setImmediate(more); else process.stdout.once('drain', more);
      };
      return more();
    }
    case 'bigflood': {
      const line = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'y'.repeat(1000000) } }) + '\n';
      let n = 0;
      const more = () => {
        if (n++ >= 400) return ok({ content: [{ type: 'text', text: 'big ' + n }] });
        if (process.stdout.write(line)) setImmediate(more); else process.stdout.once('drain', more);
      };
      return more();
    }
    case 'notifyflood': {
      let n = 0;
      const more = () => {
        let chunk = '';
        for (let i = 0; i < 2000; i++) chunk += JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'n' + n++ } }) + '\n';
        if (n >= Number(process.env.EVIL_NOTES ?? 400000)) return ok({ content: [{ type: 'text', text: 'noted ' + n }] });
        if (process.stdout.write(chunk)) setImmediate(more); else process.stdout.once('drain', more);
      };
      return more();
    }
  }
};
process.stdin.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    try { handle(JSON.parse(line)); } catch (e) { process.stderr.write(String(e) + '\n'); }
  }
});
`;

let h: Harness;
let codeA: string;
let codeB: string;

const run = async (key: string, agent: string, code: string, id = 'p'): Promise<Loose> => {
  const [r] = await h.calls(key, agent, [[id, 'run_code', { code, description: 'probe' }]]);
  return r;
};

beforeAll(async () => {
  h = await startHarness({ isolateWorkers: 2 });
  codeA = await h.agent(h.keyA, { preset: 'code' });
  codeB = await h.agent(h.keyB, { preset: 'code' });
});

afterAll(async () => {
  await h?.close();
});

describe('run_code: prototypes the prelude relies on', () => {
  it('an Object.prototype.toJSON of the program leaves its thrown error its own, not "stalled"', async () => {
    const cases: [string, RegExp][] = [
      [
        `Object.prototype.toJSON = function () { throw new Error('tj'); }; throw new Error('boom');`,
        /Error: boom/,
      ],
      [`Object.prototype.toJSON = function () { return 'forged'; }; throw new Error('boom');`, /Error: boom/],
      [
        `Object.prototype.toJSON = function () { throw 1; }; null.x;`,
        /TypeError: Cannot read properties of null/,
      ],
      [
        `Object.prototype.toJSON = function () { throw 1; }; return await tools.glob({ pattern: 'x' });`,
        /not JSON-serialisable/,
      ],
    ];
    for (const [i, [code, expected]] of cases.entries()) {
      const r = await run(h.keyA, codeA, code, `tj${i}`);
      expect(r.ok, code).toBe(false);
      expect(r.error, code).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'runtime' } });
      expect(text(r), code).toMatch(expected);
    }
  });
});

describe('a hostile stdio MCP server', () => {
  /** A fresh agent with the server registered (a server cut off often enough is marked failed). */
  const withServer = async (): Promise<string> => {
    const agent = await h.agent(h.keyA, { mode: 'both' });
    const [w] = await h.calls(h.keyA, agent, [
      ['w', 'write', { file_path: 'evil.js', content: EVIL_SERVER }],
    ]);
    expect(w?.ok, text(w)).toBe(true);
    const registered = await h.http(h.keyA, 'POST', `/v1/agents/${agent}/mcp-servers`, {
      name: 'evil',
      command: ['node', 'evil.js'],
      timeoutMs: 5000,
    });
    expect(registered.status, registered.text).toBe(201);
    return agent;
  };
  const call = async (agent: string, tool: string, id = tool): Promise<Loose> => {
    const [r] = await h.calls(h.keyA, agent, [[id, `mcp__evil__${tool}`, {}]]);
    return r;
  };
  /** The longest GET /v1/health took while `work` ran (asked every 50 ms). */
  const healthDuring = async <T>(work: Promise<T>): Promise<{ value: T; worstMs: number }> => {
    let worstMs = 0;
    let over = false;
    const poll = (async () => {
      while (!over) {
        const t = performance.now();
        await h.http(undefined, 'GET', '/v1/health');
        worstMs = Math.max(worstMs, performance.now() - t);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const value = await work.finally(() => {
      over = true;
    });
    await poll;
    return { value, worstMs };
  };

  it('answers with wrong ids, twice, in hostile shapes or garbage: each a stable error of that call', async () => {
    const agent = await withServer();
    expect(text(await call(agent, 'ok'))).toBe('fine');
    const wrong = await call(agent, 'wrongid');
    expect(wrong.error?.code, text(wrong)).toBe('TOOL_TIMEOUT');
    expect(text(await call(agent, 'twice'))).toBe('first');
    expect(text(await call(agent, 'ok', 'ok2'))).toBe('fine');
    for (const tool of ['hostile', 'nullblock']) {
      const r = await call(agent, tool);
      expect(r.ok, `${tool}: ${text(r)}`).toBe(false);
      expect(['MCP_SERVER_FAILED', 'TOOL_FAILED'], `${tool}: ${text(r)}`).toContain(r.error?.code);
    }
    // WAS A BUG: structured content 6,000 levels deep overflowed the stack answering POST /calls (500).
    const deep = await call(agent, 'deepstruct');
    expect(deep.error?.code, text(deep)).toBe('TOOL_FAILED');
    expect(text(deep)).toMatch(/nests more than 256 levels deep/);
    expect(text(await call(agent, 'garbage'))).toBe('after garbage');
    expect(text(await call(agent, 'progress'))).toBe('progressed');
    const huge = await call(agent, 'huge');
    expect(huge.error?.code, text(huge)).toBe('MCP_SERVER_FAILED');
    expect(text(huge)).toMatch(/over \d+ bytes/);
    expect(text(await call(agent, 'ok', 'ok3'))).toBe('fine');
  });

  // WAS A BUG: every line a stdio server writes is parsed and handled on the API process's event
  // loop, unbounded: 5 s of notifications (or of pings it never read the answers of) held GET
  // /v1/health for 1.8-2.2 s and grew the process by 76-265 MiB. Now each is cut off at its budget.
  it('floods of notifications, requests, junk lines or big lines are cut off without holding the API', async () => {
    for (const tool of ['notifyflood', 'pingflood', 'junkflood', 'bigflood']) {
      const agent = await withServer();
      const before = process.memoryUsage().rss;
      const { value: r, worstMs } = await healthDuring(call(agent, tool));
      const grownMiB = (process.memoryUsage().rss - before) / 2 ** 20;
      // 1 MB lines come slower than their byte budget refills: they may meet the call's deadline first.
      if (tool === 'bigflood') expect(['MCP_SERVER_FAILED', 'TOOL_TIMEOUT']).toContain(r.error?.code);
      else {
        expect(r.error?.code, `${tool}: ${text(r)}`).toBe('MCP_SERVER_FAILED');
        expect(text(r), tool).toMatch(/budget/);
      }
      // Bounds with room for a loaded machine; before the budget: 1.8-2.2 s, and up to 265 MiB of
      // resident growth (after: 10-180 ms; the memory is mostly garbage not yet collected).
      expect(worstMs, tool).toBeLessThan(1000);
      expect(grownMiB, tool).toBeLessThan(160);
      const other = await run(h.keyB, codeB, 'return "b-served";', `b-${tool}`);
      expect(text(other)).toBe('b-served');
      // The next call starts the server afresh.
      expect(text(await call(agent, 'ok', `after-${tool}`))).toBe('fine');
    }
  }, 300_000);
});

describe('run_code: values nested past what the host can serialise', () => {
  // WAS A BUG: a program returning 5,000 levels of nesting made POST /calls answer 500 INTERNAL (a
  // stack overflow serialising the response; 3,000 passed). How deep the isolate itself can
  // serialise depends on the thread it runs on: past that, the program's own RangeError.
  it('a deeply nested return value ends the run with a stable error; the batch answers 200', async () => {
    for (const depth of [300, 5000]) {
      const res = await h.http(h.keyA, 'POST', `/v1/agents/${codeA}/calls`, {
        calls: [
          {
            id: `deep-return-${depth}`,
            name: 'run_code',
            arguments: {
              description: 'x',
              code: `let o = {}; const root = o; for (let i = 0; i < ${depth}; i++) { o.a = {}; o = o.a; } return root;`,
            },
          },
        ],
      });
      expect(res.status, res.text.slice(0, 300)).toBe(200);
      const [r] = res.json.results as Loose[];
      expect(r.error?.code, text(r)).toBe('CODE_RUN_FAILED');
      if (depth === 300) {
        expect(r.error.data.kind).toBe('limit');
        expect(text(r)).toMatch(/return value nests arrays or objects more than 256 levels deep/);
      } else expect(['limit', 'runtime']).toContain(r.error.data.kind);
    }
    const shallow = await run(
      h.keyA,
      codeA,
      'let o = 1; for (let i = 0; i < 200; i++) o = [o]; return o;',
      'ok-200',
    );
    expect(shallow.ok, text(shallow)).toBe(true);
  });
});

describe('run_code: programs that hold their isolate while they wait', () => {
  it("a tenant's many programs waiting on slow tools keep no other tenant's program waiting, and end with their agents", async () => {
    const agents = await Promise.all(Array.from({ length: 3 }, () => h.agent(h.keyA, { preset: 'code' })));
    const slow = `await Promise.all(Array.from({ length: 64 }, () => tools.bash({ command: 'sleep 20', description: 'hold' })));
      return 'held';`;
    const holds = agents.flatMap((agent, a) =>
      Array.from({ length: 4 }, (_, k) =>
        h
          .http(h.keyA, 'POST', `/v1/agents/${agent}/calls`, {
            calls: [
              { id: `hold${a}-${k}`, name: 'run_code', arguments: { code: slow, description: 'hold' } },
            ],
          })
          .then((r) => r.json?.results?.[0] as Loose),
      ),
    );
    await new Promise((r) => setTimeout(r, 3000));
    const t = Date.now();
    const other = await run(
      h.keyB,
      codeB,
      'return await tools.bash({ command: "echo b-ran", description: "b" });',
      'bwait',
    );
    expect(text(other)).toContain('b-ran');
    // A starvation guard, not a speed claim (measured: 0.3-0.5 s).
    expect(Date.now() - t).toBeLessThan(10_000);
    // 12 programs of 64 twenty-second commands each would take minutes: deleting the agents ends them.
    const deletedAt = Date.now();
    for (const agent of agents)
      expect((await h.http(h.keyA, 'DELETE', `/v1/agents/${agent}`)).status).toBe(204);
    for (const r of await Promise.all(holds)) expect(r?.error?.code, text(r ?? {})).toBe('CODE_RUN_FAILED');
    expect(Date.now() - deletedAt).toBeLessThan(30_000);
  }, 120_000);
});

describe('run_code: hostile arguments to every kind of tool', () => {
  it('each ends as a stable code the program can read, without host paths or frames', async () => {
    const r = await run(
      h.keyA,
      codeA,
      `const probes = {
        nulPath: () => tools.write({ file_path: 'a\\u0000b.txt', content: 'x' }),
        loneSurrogate: () => tools.write({ file_path: '\\ud800.txt', content: '\\udfff' }),
        hugeOffset: () => tools.read({ file_path: 'x.txt', offset: 1e308, limit: -1 }),
        negative: () => tools.read({ file_path: 'x.txt', offset: -5 }),
        protoKeys: () => tools.glob(JSON.parse('{"pattern":"*","__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}')),
        deepArgs: () => { let o = {}; const root = o; for (let i = 0; i < 1000; i++) { o.a = {}; o = o.a; } return tools.glob({ pattern: '*', extra: root }); },
        globBomb: () => tools.glob({ pattern: '{a,b}'.repeat(40) }),
        globDeep: () => tools.glob({ pattern: '**/'.repeat(2000) + '*' }),
        grepRedos: () => tools.grep({ pattern: '(a+)+$', path: '.' }),
        editWeird: () => tools.edit({ file_path: 'x.txt', old_string: '', new_string: 'y' }),
        bashNul: () => tools.bash({ command: 'echo \\u0000', description: 'x' }),
        bashArray: () => tools.bash({ command: ['echo', 'hi'], description: 'x' }),
        numberName: () => tools.read({ file_path: 12 }),
        dotdot: () => tools.read({ file_path: '../../../../proc/self/environ' }),
        procSelf: () => tools.read({ file_path: '/proc/1/environ' }),
      };
      const out = {};
      for (const [name, f] of Object.entries(probes)) {
        try { const v = await f(); out[name] = 'ok ' + JSON.stringify(v).slice(0, 200); }
        catch (e) { out[name] = String(e.code) + ' ' + String(e.message).slice(0, 400); }
      }
      return out;`,
      'hostile-args',
    );
    expect(r.ok, text(r)).toBe(true);
    const out = JSON.parse(text(r).slice(text(r).indexOf('{'))) as Record<string, string>;
    for (const [name, line] of Object.entries(out)) {
      for (const leak of [
        /\/work\//,
        /node_modules/,
        /host\/(tools|sandbox|isolates)/,
        /\.ts:\d+/,
        /at .*\(node:/,
      ])
        expect(line, name).not.toMatch(leak);
      if (!line.startsWith('ok ')) expect(line, name).toMatch(/^[A-Z_]+ /);
      expect(line, name).not.toMatch(/^undefined /);
    }
    // WAS A BUG: code mode's bridge let through what the HTTP surface refuses or drops (body.ts):
    // 5,000 levels of nesting overflowed the stack where the log serialised the call
    // (STORE_FAILED, "try again"), and prototype keys reached the pipeline.
    expect(out.deepArgs).toMatch(/^INVALID_ARGUMENTS .*more than 64 levels deep/);
    expect(out.protoKeys).toBe('ok []');
    expect((await h.http(undefined, 'GET', '/v1/health')).status).toBe(200);
    expect(Object.prototype).not.toHaveProperty('polluted');
  }, 120_000);
});

describe('run_code: programs the compiler cannot take', () => {
  // WAS A BUG (adversarial pass, round 6): every tenant's programs go through one esbuild process.
  // 210 KB of functions nested 15,000 deep held it for over a minute; `!` 200,000 times ran its
  // goroutine stack past Go's 1 GB limit and ended it, and from then on every new program of every
  // tenant failed "the code could not be compiled" until the service restarted. Now a compile has
  // a deadline, past which esbuild is stopped and replaced, and a dead one is replaced.
  it("a program nested too deeply to compile ends as limit, and the other tenant's next program runs", async () => {
    const nested = `${'function f(){'.repeat(15_000)}${'}'.repeat(15_000)}\nreturn 1`;
    const started = performance.now();
    const [hostile, other] = await Promise.all([
      run(h.keyA, codeA, nested, 'nested'),
      run(h.keyB, codeB, `return ${Math.random()} > 2`, 'beside'),
    ]);
    expect(hostile.error, text(hostile)).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'limit' } });
    expect(text(hostile)).toMatch(/to compile/);
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(other.ok, text(other)).toBe(true);
    const after = await run(h.keyB, codeB, `const n: number = ${Math.random()};\nreturn n < 2`, 'after');
    expect(after.ok, text(after)).toBe(true);
    expect(after.value).toMatchObject({ value: true });
  }, 60_000);
});
