// Issue 32: gVisor as an optional runtime, end to end through the public API, on a private Docker
// engine with runsc registered that this file starts and removes (tests/helpers/gvisor-engine.ts;
// the machine's main engine is never touched). An agent created with `sandbox: { runtime:
// "gvisor" }` by a tenant the operator allowed runs every kind of tool under runsc (bash, the file
// tools, uploads and downloads, run_code, `ls` and `stat`, a terminal opened, typed into, read,
// resized and closed, the minimal preset's persistent shell), over the link socket (runsc's
// host-uds); a tenant not allowed is refused with RUNTIME_NOT_ALLOWED; runc agents on the same
// engine work beside it, with GNU coreutils' ls as before.
import { createHash, randomBytes } from 'node:crypto';
import { release } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  gvisorEngineUnavailable,
  type PrivateEngine,
  startGvisorEngine,
} from '../../helpers/gvisor-engine.ts';
import { until } from '../../helpers/until.ts';
import { sandboxImage } from '../sandbox/fixtures.ts';
import { type Harness, type Loose, startHarness, text } from '../security/harness.ts';

const missing = gvisorEngineUnavailable();
const suite = missing === undefined ? describe : describe.skip;
const title = missing === undefined ? '' : ` [skipped: ${missing}]`;

let engine: PrivateEngine;
let h: Harness;
/** The tenants the operator allows gvisor (DSH_GVISOR_TENANTS); tenant A's id once it exists. */
const allowed: string[] = [];
let agent: string;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** A person's WebSocket on a terminal: what it received so far, and how it closed. */
const attach = (
  url: string,
  key: string,
): Promise<{ ws: WebSocket; output: () => string; closed: Promise<{ code: number; reason: string }> }> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${key}` } });
    let out = '';
    const closed = new Promise<{ code: number; reason: string }>((done) =>
      ws.on('close', (code, reason) => done({ code, reason: reason.toString() })),
    );
    ws.on('message', (data: Buffer) => {
      out += data.toString();
    });
    ws.on('open', () => resolve({ ws, output: () => out, closed }));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.on('error', reject);
  });

suite(`agents under gVisor (runsc on a private engine)${title}`, () => {
  beforeAll(async () => {
    engine = await startGvisorEngine(sandboxImage());
    // The setting's list is read at each creation: tenant A's id joins it once the harness made A.
    h = await startHarness({ docker: engine.docker, isolateWorkers: 1, config: { gvisorTenants: allowed } });
    const tenantA = await h.server.store.tenants.verifyKey(h.keyA);
    allowed.push(tenantA?.id as string);
    agent = await h.agent(h.keyA, { preset: 'standard', mode: 'both', sandbox: { runtime: 'gvisor' } });
  }, 300_000);
  afterAll(async () => {
    await h?.close();
    await engine?.stop();
  }, 120_000);

  it('health lists the runtimes the engine offers', async () => {
    expect((await h.http(undefined, 'GET', '/v1/health')).json.runtimes).toEqual(['runc', 'gvisor']);
  });

  it('bash runs in a runsc container (not on the host kernel), over the link socket, as the agent user', async () => {
    const r: Loose = await h.bash(h.keyA, agent, 'id -u; uname -r');
    const [uid, kernel] = text(r).split('\n');
    expect(uid).toBe('1000');
    // gVisor's kernel answers uname itself, with a release of its own, never the host's.
    expect(kernel).not.toBe(release());
    // All of the agent's ids and no capability, started by the spawner (its child, not setpriv's
    // exec from sandboxd): gVisor's execve hands the real-root spawner its real ids back, and the
    // spawner takes sandboxd's split again from the agent's ids before it starts anything. A
    // command that comes before the spawner is ready starts through setpriv (same ids, parent
    // `node`): asked again until the spawner answers.
    const ids =
      'Uid: 1000 1000 1000 1000\nGid: 1000 1000 1000 1000\nCapPrm: 0000000000000000\nCapEff: 0000000000000000';
    const parents: string[] = [];
    await until(
      async () => {
        const status: Loose = await h.bash(
          h.keyA,
          agent,
          "grep -E '^(Uid|Gid|CapPrm|CapEff)' /proc/self/status; cat /proc/$PPID/comm",
        );
        const lines = text(status)
          .replace(/[\t ]+/g, ' ')
          .split('\n');
        expect(lines.slice(0, 4).join('\n')).toBe(ids);
        parents.push(lines[4] ?? '');
        return lines[4] === 'sandboxd-spawn';
      },
      { what: 'a command started by the spawner', timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(
      parents.every((p) => p === 'node' || p === 'sandboxd-spawn'),
      parents.join(),
    ).toBe(true);
    const [container] = await engine.docker.listContainers({ filters: { name: [`agent-${agent}`] } });
    const info = await engine.docker.getContainer(container?.Id as string).inspect();
    expect(info.HostConfig.Runtime).toBe('runsc');
    // The session runs over the link (not the attach stream): sandboxd dialled the host's socket.
    expect(h.logs.filter((l) => /attach stream serves instead/.test(l))).toEqual([]);
  });

  it('the file tools write, edit and read', async () => {
    const results = await h.calls(h.keyA, agent, [
      ['w', 'write', { file_path: 'notes/a.txt', content: 'one\ntwo\n' }],
      ['e', 'edit', { file_path: 'notes/a.txt', old_string: 'two', new_string: 'three' }],
      ['r', 'read', { file_path: 'notes/a.txt' }],
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, true, true]);
    expect(text(results[2] as Loose)).toMatch(/one[\s\S]*three/);
  });

  it('uploads and downloads a file byte-exact (8 MiB)', async () => {
    const blob = randomBytes(8 * 1024 * 1024);
    const put = await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/files?path=dl/blob.bin`, blob);
    expect(put.status).toBe(200);
    const back = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/files?path=dl/blob.bin`);
    expect(back.status).toBe(200);
    expect(sha(back.buf)).toBe(sha(blob));
    expect(text(await h.bash(h.keyA, agent, 'sha256sum dl/blob.bin | cut -d" " -f1'))).toBe(sha(blob));
  });

  it('run_code calls the sandbox tools from a program', async () => {
    const [r] = await h.calls(h.keyA, agent, [
      [
        'p',
        'run_code',
        {
          description: 'probe',
          code: "const out = await tools.bash({ command: 'echo from-gvisor', description: 'x' }); return out;",
        },
      ],
    ]);
    expect(JSON.stringify(r)).toContain('from-gvisor');
  });

  it('ls and stat list and stat files (gVisor refuses the statx flags of GNU coreutils; the image gives busybox ones)', async () => {
    const r: Loose = await h.bash(
      h.keyA,
      agent,
      "mkdir -p st && printf abc > st/f.txt && ls st && ls -l st/f.txt && stat -c '%s %U %F' st/f.txt && ls -d /workspace && ls -la st | wc -l",
    );
    const lines = text(r).split('\n');
    expect(lines[0]).toBe('f.txt');
    expect(lines[1]).toMatch(/^-rw-r--r-- +1 agent +agent +3 .+ st\/f\.txt$/);
    expect(lines[2]).toBe('3 agent regular file');
    expect(lines[3]).toBe('/workspace');
    expect(lines[4]).toBe('4'); // `total`, ., .. and f.txt
    // A missing path is an error that says so, not EINVAL.
    const missing: Loose = await h.bash(h.keyA, agent, 'ls st/nope; stat st/nope');
    expect(text(missing)).toMatch(/st\/nope: No such file or directory/);
    expect(text(missing)).not.toMatch(/Invalid argument/);
  });

  it('a terminal opens, echoes what is typed, resizes and closes', async () => {
    const opened = await h.http(h.keyA, 'POST', `/v1/agents/${agent}/terminals`, { cols: 90, rows: 33 });
    expect(opened.status).toBe(201);
    const tid = opened.json.id as string;
    expect(opened.json.status).toBe('running');
    const url = `${h.server.url.replace('http', 'ws')}/v1/agents/${agent}/terminals/${tid}`;
    const person = await attach(url, h.keyA);
    const shows = (pattern: RegExp, what: string) =>
      until(() => pattern.test(person.output()), { what, timeoutMs: 60_000, intervalMs: 50 });
    person.ws.send(Buffer.from('stty size; echo "typed-$((6*7))"; ls -l st\r'));
    await shows(/[\r\n]33 90\r\n/, 'the first size');
    await shows(/[\r\n]typed-42\r\n/, 'the echo');
    // The shell is the agent's, all ids and no capability (gVisor's execve gives a process whose
    // real uid is 0 its real ids back: the PTY helper is root there, its program must not be).
    person.ws.send(
      Buffer.from(
        'echo "ids-$(id -ru)-$(id -u)-$(id -rg)-$(id -g)-$(id -G)"; grep ^Cap[EP] /proc/self/status\r',
      ),
    );
    await shows(/[\r\n]ids-1000-1000-1000-1000-1000\r\n/, "the agent's ids");
    await shows(/CapPrm:\s+0{16}\r\nCapEff:\s+0{16}\r\n/, 'no capability');
    // The skeleton .bashrc aliases ls to `ls --color=auto`: the name may come in colour codes.
    await shows(/agent +agent +3 .+f\.txt/, 'ls -l in the terminal');
    person.ws.send(JSON.stringify({ type: 'resize', cols: 100, rows: 30 }));
    person.ws.send(Buffer.from('stty size\r'));
    await shows(/[\r\n]30 100\r\n/, 'the new size');
    expect((await h.http(h.keyA, 'DELETE', `/v1/agents/${agent}/terminals/${tid}`)).status).toBe(204);
    expect((await person.closed).code).toBe(1000);
    const listed = await h.http(h.keyA, 'GET', `/v1/agents/${agent}/terminals`);
    expect(listed.json.terminals.filter((t: Loose) => t.id === tid && t.status === 'running')).toEqual([]);
  });

  it('the terminal tools open, send, read and close', async () => {
    const creator = await h.agent(h.keyA, { preset: 'creator', sandbox: { runtime: 'gvisor' } });
    const call = async (name: string, args: Record<string, unknown>): Promise<Loose> =>
      (await h.calls(h.keyA, creator, [['c', name, args]]))[0] as Loose;
    const opened = await call('terminal_open', { type: 'bash', name: 'gv' });
    expect(opened.ok, JSON.stringify(opened)).toBe(true);
    const tid = opened.value.sessionId as string;
    await call('terminal_send', { sessionId: tid, text: 'echo "tool-$((2+3))"', submit: true });
    await until(
      async () => /[\r\n]tool-5/.test(text(await call('terminal_read', { sessionId: tid, offset: 0 }))),
      { what: 'the terminal to echo', timeoutMs: 60_000, intervalMs: 200 },
    );
    const closed = await call('terminal_close', { sessionId: tid });
    expect(closed.ok, JSON.stringify(closed)).toBe(true);
  });

  it('the minimal preset: bash is one persistent shell under gVisor, ls and stat included', async () => {
    const minimal = await h.agent(h.keyA, { preset: 'minimal', sandbox: { runtime: 'gvisor' } });
    const bash = async (command: string): Promise<string> =>
      text((await h.calls(h.keyA, minimal, [['b', 'bash', { command }]]))[0] as Loose);
    expect(await bash('cd /tmp && export V=kept && printf xy > f')).toBe('(no output)');
    // The container is made by the first call.
    const [container] = await engine.docker.listContainers({ filters: { name: [`agent-${minimal}`] } });
    expect((await engine.docker.getContainer(container?.Id as string).inspect()).HostConfig.Runtime).toBe(
      'runsc',
    );
    expect(await bash("pwd; echo $V; whoami; ls f; stat -c '%s' f")).toBe('/tmp\nkept\nagent\nf\n2');
    expect(await bash('id -ru; id -rg; grep ^CapEff /proc/self/status')).toBe(
      '1000\n1000\nCapEff:\t0000000000000000',
    );
    expect(await bash('ls /nope')).toMatch(/No such file or directory\nExit code: \d+$/);
  });

  it('a tenant the operator did not allow is refused gvisor, and can still use runc on the same engine', async () => {
    const res = await h.http(h.keyB, 'POST', '/v1/agents', { sandbox: { runtime: 'gvisor' } });
    expect(res.status).toBe(403);
    expect(res.json.error.code).toBe('RUNTIME_NOT_ALLOWED');
    const runc = await h.agent(h.keyB);
    expect(text(await h.bash(h.keyB, runc, 'echo runc-ok'))).toBe('runc-ok');
    // Under runc, ls is GNU coreutils' as always (busybox's comes first on PATH under gVisor only).
    expect(text(await h.bash(h.keyB, runc, 'ls --version | head -1; command -v ls'))).toBe(
      'ls (GNU coreutils) 9.1\n/usr/bin/ls',
    );
    const [container] = await engine.docker.listContainers({ filters: { name: [`agent-${runc}`] } });
    const info = await engine.docker.getContainer(container?.Id as string).inspect();
    expect(info.HostConfig.Runtime).toBe('runc');
  });
});
