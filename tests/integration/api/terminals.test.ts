// Terminals on the real sandbox image: a PTY as uid 1000 under the read-only root (python3's pty
// module does the work), terminals that outlive a host detach, the minimal preset's persistent bash
// over HTTP, and a person attached over a WebSocket on 127.0.0.1 typing `echo hi`.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { INPUT_LIMIT } from '../../../host/api/routes/terminals.ts';
import type { SandboxTerminals } from '../../../host/sandbox/types.ts';
import { until as waitUntil } from '../../helpers/until.ts';
import { type Harness, type Loose, METRICS_KEY, startHarness, text as textOf } from '../security/harness.ts';

let h: Harness;
const http: Harness['http'] = (...args) => h.http(...args);
const call = async (key: string, agentId: string, name: string, args: Record<string, unknown>) =>
  (await h.calls(key, agentId, [['c1', name, args]]))[0] as Loose;

const until = async (terms: SandboxTerminals, id: string, pattern: RegExp, from = 0) => {
  let text = '';
  let next = from;
  for (const end = Date.now() + 20_000; !pattern.test(text); ) {
    if (Date.now() > end) throw new Error(`no ${pattern} in ${JSON.stringify(text)}`);
    const r = await terms.read(id, { offset: next, waitMs: 500 });
    text += r.data.toString();
    next = r.nextOffset;
  }
  return { text, next };
};

/** A WebSocket client that collects everything the server sends. */
const connect = (
  url: string,
  options: { headers?: Record<string, string>; protocols?: string[] } = {},
): Promise<{ ws: WebSocket; output: () => string; closed: Promise<{ code: number; reason: string }> }> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options.protocols ?? [], { headers: options.headers ?? {} });
    let out = '';
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on('close', (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.on('message', (data: Buffer, isBinary) => {
      expect(isBinary).toBe(true);
      out += data.toString();
    });
    ws.on('open', () => resolve({ ws, output: () => out, closed }));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.on('error', reject);
  });
const waitFor = async (read: () => string, pattern: RegExp): Promise<string> => {
  for (const end = Date.now() + 20_000; !pattern.test(read()); ) {
    if (Date.now() > end) throw new Error(`no ${pattern} in ${JSON.stringify(read())}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return read();
};

beforeAll(async () => {
  h = await startHarness({ isolateWorkers: 1 });
});

/** A gauge's value from /metrics. */
const gauge = async (name: string): Promise<number> => {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec((await http(METRICS_KEY, 'GET', '/metrics')).text);
  if (!m) throw new Error(`no gauge ${name}`);
  return Number(m[1]);
};

afterAll(() => h?.close());

describe('terminals on the sandbox image', () => {
  it('a PTY as uid 1000 under the read-only root, via python3 pty; it outlives a detach', async () => {
    const provider = h.fixture.provider();
    const sandbox = await provider.create({ tenantId: 't', agentId: `pty-${h.fixture.runId}` });
    try {
      expect(provider.flags.terminals).toBe(true);
      const terms = sandbox.terminals as SandboxTerminals;
      const t = await terms.open({ cols: 90, rows: 33, env: { PS1: '$ ' } });
      expect(t).toMatchObject({ status: 'running', cwd: '/workspace', command: ['bash'] });
      await terms.write(
        t.id,
        "id -u; tty; stty size; python3 -c \"import pty; print('py' + '-pty-ok')\"; touch /etc/x 2>/dev/null || echo ro-$((1+1))\r",
      );
      const out = await until(terms, t.id, /ro-2/);
      expect(out.text).toMatch(/[\r\n]1000\r\n/);
      expect(out.text).toMatch(/\/dev\/pts\/\d+/);
      expect(out.text).toContain('33 90');
      expect(out.text).toContain('py-pty-ok');
      await terms.write(t.id, 'cd /tmp; sleep 60\r');
      await waitUntil(async () => (await terms.list()).find((x) => x.id === t.id)?.busy, {
        what: 'the terminal to be busy',
      });
      await terms.signal(t.id, 'SIGINT');
      // Detach the host side; a fresh handle re-attaches to the same sandboxd.
      await sandbox.detach();
      const again = (await provider.get(`pty-${h.fixture.runId}`))?.terminals as SandboxTerminals;
      // SIGINT reaches sleep at once, but bash reaps it a moment later: wait for the prompt.
      const listed = await waitUntil(
        async () => {
          const found = (await again.list()).find((x) => x.id === t.id);
          return found?.busy === false ? found : undefined;
        },
        { what: 'the prompt after SIGINT', timeoutMs: 60_000, intervalMs: 50 },
      );
      expect(listed).toMatchObject({ status: 'running', busy: false });
      expect((await again.read(t.id, { offset: 0 })).data.toString()).toContain('py-pty-ok');
      await again.write(t.id, 'pwd\r');
      await until(again, t.id, /[\r\n]\/tmp\r\n/, out.next);
      expect((await again.close(t.id)).status).toBe('exited');
    } finally {
      await provider.destroy(`pty-${h.fixture.runId}`);
      await provider.close();
    }
  });

  it('minimal preset: bash is one persistent shell', async () => {
    const agent = (await http(h.keyA, 'POST', '/v1/agents', { preset: 'minimal' })).json;
    const tools = (await http(h.keyA, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools;
    expect(tools.map((t: Loose) => t.name)).toEqual(['bash', 'str_replace_editor']);
    expect(Object.keys(tools[0].parameters.properties)).toEqual(['command']);
    expect(textOf(await call(h.keyA, agent.id, 'bash', { command: 'cd /tmp && export V=kept' }))).toBe(
      '(no output)',
    );
    expect(textOf(await call(h.keyA, agent.id, 'bash', { command: 'pwd; echo $V; whoami' }))).toBe(
      '/tmp\nkept\nagent',
    );
    const failed = await call(h.keyA, agent.id, 'bash', { command: 'ls /nope' });
    expect(textOf(failed)).toMatch(/No such file or directory\nExit code: 2$/);
  });

  it('a person attaches over a WebSocket: replay, typing, resize, exit', async () => {
    const agent = (await http(h.keyA, 'POST', '/v1/agents', { preset: 'creator' })).json;
    const opened = await call(h.keyA, agent.id, 'terminal_open', { type: 'bash', name: 'shared' });
    expect(opened.ok).toBe(true);
    const tid = opened.value.sessionId as string;
    await call(h.keyA, agent.id, 'terminal_send', {
      sessionId: tid,
      text: 'echo from-agent-$((1+1))',
      submit: true,
    });
    const url = `${h.server.url.replace('http', 'ws')}/v1/agents/${agent.id}/terminals/${tid}`;

    const a = await connect(url, { headers: { Authorization: `Bearer ${h.keyA}` } });
    await waitFor(a.output, /from-agent-2/); // the buffer is replayed on attach
    a.ws.send(Buffer.from('echo hi\r'));
    await waitFor(a.output, /[\r\n]hi\r\n/);
    a.ws.send(JSON.stringify({ type: 'resize', cols: 100, rows: 30 }));
    a.ws.send(Buffer.from('stty size\r'));
    await waitFor(a.output, /[\r\n]30 100\r\n/);

    // The agent sees what the person typed.
    const read = await call(h.keyA, agent.id, 'terminal_read', { sessionId: tid, offset: 0 });
    expect(textOf(read)).toContain('30 100');

    // Browsers: the key as a query parameter or as a subprotocol; the key is never echoed.
    const b = await connect(`${url}?token=${h.keyA}`);
    await waitFor(b.output, /30 100/);
    const c = await connect(url, { protocols: ['dsh.terminal.v1', `bearer.${h.keyA}`] });
    expect(c.ws.protocol).toBe('dsh.terminal.v1');
    await waitFor(c.output, /30 100/);

    // Another tenant, a bad key, an unknown terminal: refused before the upgrade.
    await expect(connect(url, { headers: { Authorization: `Bearer ${h.keyB}` } })).rejects.toThrow(
      'HTTP 404',
    );
    await expect(connect(`${url}?token=dsk_nope`)).rejects.toThrow('HTTP 401');
    await expect(connect(`${url}x`, { headers: { Authorization: `Bearer ${h.keyA}` } })).rejects.toThrow(
      'HTTP 404',
    );

    // The terminal ends: every attached socket closes normally.
    a.ws.send(Buffer.from('exit 4\r'));
    for (const s of [a, b, c]) expect(await s.closed).toEqual({ code: 1000, reason: 'terminal exited (4)' });
  });

  it('at most the cap of sockets per tenant, even when 60 connect at once (issue 11)', async () => {
    const agent = (await http(h.keyA, 'POST', '/v1/agents', { preset: 'creator' })).json;
    const opened = await call(h.keyA, agent.id, 'terminal_open', { type: 'bash', name: 'many' });
    const url = `${h.server.url.replace('http', 'ws')}/v1/agents/${agent.id}/terminals/${opened.value.sessionId}`;
    const auth = { headers: { Authorization: `Bearer ${h.keyA}` } };
    const attempts = await Promise.allSettled(Array.from({ length: 60 }, () => connect(url, auth)));
    const ok = attempts.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
    const refused = attempts.flatMap((a) => (a.status === 'rejected' ? [String(a.reason)] : []));
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length).toBeLessThanOrEqual(32);
    expect(new Set(refused)).toEqual(new Set(['Error: HTTP 429']));
    expect(await gauge('dsh_terminal_sockets_open')).toBe(ok.length);
    for (const s of ok) s.ws.close();
    await Promise.all(ok.map((s) => s.closed));
    for (const end = Date.now() + 5000; (await gauge('dsh_terminal_sockets_open')) !== 0; ) {
      if (Date.now() > end) throw new Error('terminal socket slots were not given back');
      await new Promise((r) => setTimeout(r, 50));
    }
    const again = await connect(url, auth);
    again.ws.close();
    await again.closed;
  });

  it('input is bounded: a flood is paused, not buffered, and arrives whole (issue 11)', async () => {
    const agent = (await http(h.keyA, 'POST', '/v1/agents', { preset: 'creator' })).json;
    const opened = await call(h.keyA, agent.id, 'terminal_open', { type: 'bash', name: 'flood' });
    const tid = opened.value.sessionId as string;
    const total = 32 * 1024 * 1024;
    const sent = await call(h.keyA, agent.id, 'terminal_send', {
      sessionId: tid,
      text: `stty raw -echo; echo ar$((1+1))med; head -c ${total} | wc -c; stty sane`,
      submit: true,
    });
    // Raw mode is on (a cooked line discipline would drop most of a line this long) once it says so.
    let seen = textOf(sent);
    await waitUntil(
      async () => {
        seen += textOf(await call(h.keyA, agent.id, 'terminal_read', { sessionId: tid }));
        return seen.includes('ar2med');
      },
      { what: 'raw mode', timeoutMs: 20_000 },
    );
    const url = `${h.server.url.replace('http', 'ws')}/v1/agents/${agent.id}/terminals/${tid}`;
    const s = await connect(url, { headers: { Authorization: `Bearer ${h.keyA}` } });
    const frame = Buffer.alloc(256 * 1024, 'a');
    let maxClientBuffered = 0;
    for (let sent = 0; sent < total; sent += frame.length) {
      s.ws.send(frame);
      maxClientBuffered = Math.max(maxClientBuffered, s.ws.bufferedAmount);
    }
    await waitFor(s.output, new RegExp(`[\r\n]${total}\r?\n`));
    // The server held at most its limit at any moment (the client's own queue took the rest).
    expect(await gauge('dsh_terminal_input_pending_bytes_max')).toBeLessThanOrEqual(INPUT_LIMIT);
    expect(maxClientBuffered).toBeGreaterThan(INPUT_LIMIT);
    expect(await gauge('dsh_terminal_input_pending_bytes')).toBe(0);
    s.ws.close();
    await s.closed;
  });

  it('a frame over the cap closes the socket 1009; deleting the agent closes the rest', async () => {
    const agent = (await http(h.keyA, 'POST', '/v1/agents', { preset: 'creator' })).json;
    const opened = await call(h.keyA, agent.id, 'terminal_open', { type: 'bash', name: 'gone' });
    const url = `${h.server.url.replace('http', 'ws')}/v1/agents/${agent.id}/terminals/${opened.value.sessionId}`;
    const auth = { headers: { Authorization: `Bearer ${h.keyA}` } };
    const big = await connect(url, auth);
    big.ws.send(Buffer.alloc(300 * 1024));
    expect((await big.closed).code).toBe(1009);
    const kept = await connect(url, auth);
    expect((await http(h.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    expect(await kept.closed).toEqual({ code: 1000, reason: 'agent deleted' });
    await expect(connect(url, auth)).rejects.toThrow('HTTP 404');
  });
});
