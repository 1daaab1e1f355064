import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { gone, useLocalSandboxd } from './harness.ts';

const local = useLocalSandboxd();

describe('sandboxd jobs', () => {
  it('runs a job in the background and returns its combined output', async () => {
    const job = await local.c.jobs.start('echo out; echo err >&2; sleep 0.3; echo done; exit 3', {
      cwd: '.',
    });
    expect(job).toMatchObject({ status: 'running', exitCode: null, cwd: local.sd.root, endedAt: null });
    const out = await local.c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    expect(out).toMatchObject({
      status: 'exited',
      exitCode: 3,
      output: 'out\nerr\ndone\n',
      nextOffset: 13,
      truncated: false,
    });
    expect(out.endedAt).toBeGreaterThanOrEqual(out.startedAt);
    expect(await local.c.jobs.output(job.id, { offset: 4 })).toMatchObject({
      output: 'err\ndone\n',
      offset: 4,
      nextOffset: 13,
    });
    // The newest output; a tail starts at a character, never inside one.
    expect(await local.c.jobs.output(job.id, { tail: 5 })).toMatchObject({
      output: 'done\n',
      offset: 8,
      nextOffset: 13,
      truncated: false,
    });
    const utf = await local.c.jobs.start("printf 'aéb'", { cwd: '.' });
    await local.c.jobs.output(utf.id, { wait: true, timeoutMs: 10_000 });
    expect(await local.c.jobs.output(utf.id, { tail: 2 })).toMatchObject({ output: 'b', offset: 3 });
    await expect(local.c.jobs.output('nope')).rejects.toMatchObject({ code: 'JOB_NOT_FOUND' });
  });

  it('a job that ends at once is seen to end (its exit is heard even while its record is written)', async () => {
    const jobs = await Promise.all(Array.from({ length: 30 }, (_, i) => local.c.jobs.start(`echo ${i}`)));
    const outs = await Promise.all(
      jobs.map((j) => local.c.jobs.output(j.id, { wait: true, timeoutMs: 5000 })),
    );
    expect(outs.map((o) => [o.status, o.output])).toEqual(jobs.map((_, i) => ['exited', `${i}\n`]));
  });

  it('wait gives up after timeoutMs while the job keeps running', async () => {
    const job = await local.c.jobs.start('echo tick; sleep 100');
    const t0 = Date.now();
    const out = await local.c.jobs.output(job.id, { wait: true, timeoutMs: 400 });
    // The timeout under test: the wait lasted it (a lower bound, which load only lengthens).
    expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
    expect(out).toMatchObject({ status: 'running', output: 'tick\n' });
    const killed = await local.c.jobs.kill(job.id, 'SIGKILL');
    expect(killed).toMatchObject({ status: 'killed', exitCode: null });
  });

  it('kill ends the whole process group', async () => {
    const job = await local.c.jobs.start('sleep 100 & echo $!; sleep 100');
    let out = await local.c.jobs.output(job.id);
    for (let i = 0; i < 50 && out.output === ''; i++) {
      await new Promise((r) => setTimeout(r, 50));
      out = await local.c.jobs.output(job.id);
    }
    const bg = Number(out.output.trim());
    expect(gone(bg)).toBe(false);
    expect((await local.c.jobs.kill(job.id)).status).toBe('killed');
    await until(() => gone(bg), { what: 'the background sleep to be gone' });
  });

  it('jobs survive a reconnect with their complete output', async () => {
    const job = await local.c.jobs.start(
      'for i in 1 2 3; do echo line $i; sleep 0.2; done; : > survived.done',
    );
    local.c.close(); // the control plane goes away mid-job...
    await until(() => existsSync(join(local.sd.root, 'survived.done')), { what: 'the job to finish' });
    local.c = await local.sd.connect(); // ...and a new one attaches to the same sandboxd
    const out = await local.c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    expect(out).toMatchObject({ status: 'exited', exitCode: 0, output: 'line 1\nline 2\nline 3\n' });
    const listed = (await local.c.jobs.list()).find((j) => j.id === job.id);
    expect(listed).toMatchObject({ command: job.command, status: 'exited', exitCode: 0 });
    expect((await local.c.jobs.list()).map((j) => j.id)).toContain(job.id);
  });

  it('a reconnect cancels the old session’s waits and execs, not its jobs', async () => {
    // The job runs until the test lets it finish (after the reconnect), or gives up after 10 s.
    const job = await local.c.jobs.start(
      'for i in $(seq 100); do [ -e finish ] && break; sleep 0.1; done; echo finished',
    );
    const waiting = local.c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    const pidFile = join(local.sd.root, 'exec.pid');
    const exec = local.c.exec('echo $$ > exec.pid.tmp; mv exec.pid.tmp exec.pid; exec sleep 100');
    await until(() => existsSync(pidFile), { what: 'the exec to start' }); // the wait was sent before it
    local.c = await local.sd.connect();
    await expect(waiting).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    await expect(exec).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    writeFileSync(join(local.sd.root, 'finish'), '');
    const out = await local.c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    expect(out).toMatchObject({ status: 'exited', output: 'finished\n' });
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await until(() => gone(pid), { what: 'the old session’s exec to be gone' });
  });
});
