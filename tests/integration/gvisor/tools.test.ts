// Issue 32: gVisor as an optional runtime, end to end through the public API, on a private Docker
// engine with runsc registered that this file starts and removes (tests/helpers/gvisor-engine.ts;
// the machine's main engine is never touched). An agent created with `sandbox: { runtime:
// "gvisor" }` by a tenant the operator allowed runs every kind of tool under runsc (bash, the file
// tools, uploads and downloads, run_code), over the link socket (runsc's host-uds); a tenant not
// allowed is refused with RUNTIME_NOT_ALLOWED; runc agents on the same engine work beside it.
import { createHash, randomBytes } from 'node:crypto';
import { release } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  gvisorEngineUnavailable,
  type PrivateEngine,
  startGvisorEngine,
} from '../../helpers/gvisor-engine.ts';
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

  it('a tenant the operator did not allow is refused gvisor, and can still use runc on the same engine', async () => {
    const res = await h.http(h.keyB, 'POST', '/v1/agents', { sandbox: { runtime: 'gvisor' } });
    expect(res.status).toBe(403);
    expect(res.json.error.code).toBe('RUNTIME_NOT_ALLOWED');
    const runc = await h.agent(h.keyB);
    expect(text(await h.bash(h.keyB, runc, 'echo runc-ok'))).toBe('runc-ok');
    const [container] = await engine.docker.listContainers({ filters: { name: [`agent-${runc}`] } });
    const info = await engine.docker.getContainer(container?.Id as string).inspect();
    expect(info.HostConfig.Runtime).toBe('runc');
  });
});
