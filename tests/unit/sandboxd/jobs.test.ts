import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';
import { gone, type LocalSandboxd, startLocalSandboxd } from './harness.ts';

let sd: LocalSandboxd;
let c: SandboxdClient;
beforeAll(async () => {
  sd = await startLocalSandboxd();
  c = await sd.connect();
});
afterAll(async () => {
  c?.close();
  await sd?.stop();
});

describe('sandboxd jobs', () => {
  it('runs a job in the background and returns its combined output', async () => {
    const job = await c.jobs.start('echo out; echo err >&2; sleep 0.3; echo done; exit 3', { cwd: '.' });
    expect(job).toMatchObject({ status: 'running', exitCode: null, cwd: sd.root, endedAt: null });
    const out = await c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    expect(out).toMatchObject({
      status: 'exited',
      exitCode: 3,
      output: 'out\nerr\ndone\n',
      nextOffset: 13,
      truncated: false,
    });
    expect(out.endedAt).toBeGreaterThanOrEqual(out.startedAt);
    expect(await c.jobs.output(job.id, { offset: 4 })).toMatchObject({
      output: 'err\ndone\n',
      nextOffset: 13,
    });
    await expect(c.jobs.output('nope')).rejects.toMatchObject({ code: 'JOB_NOT_FOUND' });
  });

  it('wait gives up after timeoutMs while the job keeps running', async () => {
    const job = await c.jobs.start('echo tick; sleep 100');
    const t0 = Date.now();
    const out = await c.jobs.output(job.id, { wait: true, timeoutMs: 400 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
    expect(out).toMatchObject({ status: 'running', output: 'tick\n' });
    const killed = await c.jobs.kill(job.id, 'SIGKILL');
    expect(killed).toMatchObject({ status: 'killed', exitCode: null });
  });

  it('kill ends the whole process group', async () => {
    const job = await c.jobs.start('sleep 100 & echo $!; sleep 100');
    let out = await c.jobs.output(job.id);
    for (let i = 0; i < 50 && out.output === ''; i++) {
      await new Promise((r) => setTimeout(r, 50));
      out = await c.jobs.output(job.id);
    }
    const bg = Number(out.output.trim());
    expect(gone(bg)).toBe(false);
    expect((await c.jobs.kill(job.id)).status).toBe('killed');
    await new Promise((r) => setTimeout(r, 200));
    expect(gone(bg)).toBe(true);
  });

  it('jobs survive a reconnect with their complete output', async () => {
    const job = await c.jobs.start('for i in 1 2 3; do echo line $i; sleep 0.2; done');
    c.close(); // the control plane goes away mid-job...
    await new Promise((r) => setTimeout(r, 900));
    c = await sd.connect(); // ...and a new one attaches to the same sandboxd
    const listed = (await c.jobs.list()).find((j) => j.id === job.id);
    expect(listed).toMatchObject({ command: job.command, status: 'exited', exitCode: 0 });
    expect((await c.jobs.output(job.id)).output).toBe('line 1\nline 2\nline 3\n');
    expect((await c.jobs.list()).map((j) => j.id)).toContain(job.id);
  });

  it('a reconnect cancels the old session’s waits and execs, not its jobs', async () => {
    const job = await c.jobs.start('sleep 0.5; echo finished');
    const waiting = c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    const exec = c.exec('echo $$ > exec.pid; exec sleep 100');
    await new Promise((r) => setTimeout(r, 300));
    c = await sd.connect();
    await expect(waiting).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    await expect(exec).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    const out = await c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    expect(out).toMatchObject({ status: 'exited', output: 'finished\n' });
    await new Promise((r) => setTimeout(r, 200));
    expect(gone(Number(readFileSync(join(sd.root, 'exec.pid'), 'utf8')))).toBe(true);
  });
});
