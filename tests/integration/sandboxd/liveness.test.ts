// A sandboxd that stops answering (SIGSTOP: the agent cannot send it any more, so root in the
// container does, as a stuck sandboxd would behave) is found by the client's liveness ping while a
// call waits, and the provider restarts its container by itself: the call in flight fails at once
// with a clear SANDBOX_UNAVAILABLE, the next one works, on the same workspace, with a new sandboxd.

import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { connectSandboxd } from '../../../host/sandbox/sandboxd/client.ts';
import { dockerFixture } from '../sandbox/fixtures.ts';

const fx = dockerFixture();
const LIVENESS_MS = 1500;
const provider = fx.provider({ connect: (o) => connectSandboxd({ ...o, livenessMs: LIVENESS_MS }) });
afterAll(async () => {
  await provider.close();
  await fx.sweep();
});

const sandboxdPid = async (id: string): Promise<string> =>
  execFileSync('docker', ['exec', '-u', '0', id, 'pgrep', '-x', 'node'], { encoding: 'utf8' }).trim();

describe('a sandboxd that stops answering', () => {
  it('is detected while a call waits, restarted with its container, and the sandbox works again', async () => {
    const sb = await provider.create({ tenantId: 't', agentId: 'stalled' });
    await sb.fs.writeFile('kept.txt', 'still here\n');
    expect((await sb.exec('echo before')).stdout).toBe('before\n');
    const before = await sandboxdPid(sb.id);
    execFileSync('docker', ['exec', '-u', '0', sb.id, 'kill', '-STOP', before]);

    const stalled = await sb.exec('echo never', { timeoutMs: 60_000 }).catch((e: unknown) => e);
    // Found by the watchdog (a ping or two): its message, not the call's own 65 s deadline's
    // ("sandboxd did not answer exec within …").
    expect(stalled).toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
      message: expect.stringMatching(/stopped answering/),
    });

    const after = await sb.exec('cat kept.txt; id -u');
    expect(after).toMatchObject({ exitCode: 0, stdout: 'still here\n1000\n' });
    const now = await sandboxdPid(sb.id);
    expect(now).not.toBe('');
    expect(
      execFileSync('docker', ['exec', '-u', '0', sb.id, 'ps', '-o', 'stat=', '-p', now], {
        encoding: 'utf8',
      }).trim(),
    ).not.toMatch(/^T/);
  });
});
