import { describe, expect, it } from 'vitest';
import { createMemoryProvider } from '../../../host/sandbox/memory/index.ts';
import { codeOf } from '../../contract/sandbox/suite.ts';

describe('memory provider', () => {
  it('declares that it is not isolated and refuses exec and jobs without a run collaborator', async () => {
    const p = createMemoryProvider();
    expect(p.flags).toEqual({ durableJobs: false, isolated: false, terminals: false, stdio: false });
    const sb = await p.create({ tenantId: 't', agentId: 'a' });
    expect(await codeOf(sb.exec('ls'))).toBe('SANDBOX_UNAVAILABLE');
    await expect(sb.exec('ls')).rejects.toThrow(/not supported by the memory provider/);
    const job = await sb.jobs.start('ls');
    const out = await sb.jobs.output(job.id, { wait: true });
    expect(out.status).toBe('exited');
    expect(out.output).toMatch(/not supported/);
  });

  it('runs scripted commands with streaming, output cap, cwd confinement and fs access', async () => {
    const p = createMemoryProvider({
      limits: { maxOutputBytes: 8 },
      run: async (io) => {
        io.stdout(`${io.cwd}|${io.env.X}|${io.stdin}`);
        io.stderr('e');
        await io.fs.writeFile('ran.txt', io.command);
        return 2;
      },
    });
    const sb = await p.create({ tenantId: 't', agentId: 'a' });
    const seen: string[] = [];
    const r = await sb.exec('cmd', {
      cwd: '.',
      env: { X: 'y' },
      stdin: 'in',
      onStdout: (c) => seen.push(c.toString()),
    });
    expect(r).toMatchObject({
      exitCode: 2,
      stdout: '/workspa',
      stderr: '',
      truncated: true,
      timedOut: false,
    });
    expect(seen.join('')).toBe('/workspace|y|in');
    expect((await sb.fs.readFile('ran.txt')).toString()).toBe('cmd');
    expect(await codeOf(sb.exec('cmd', { cwd: '/etc' }))).toBe('PATH_OUTSIDE_WORKSPACE');
  });

  it('times out, honours abort signals, and kills jobs', async () => {
    const p = createMemoryProvider({
      run: (io) => new Promise((resolve) => io.signal.addEventListener('abort', () => resolve(0))),
    });
    const sb = await p.create({ tenantId: 't', agentId: 'a' });
    expect(await sb.exec('hang', { timeoutMs: 20 })).toMatchObject({ timedOut: true, exitCode: null });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    expect(await sb.exec('hang', { signal: ac.signal })).toMatchObject({ timedOut: false, exitCode: null });
    const job = await sb.jobs.start('hang');
    expect((await sb.jobs.output(job.id, { wait: true, timeoutMs: 20 })).status).toBe('running');
    expect((await sb.jobs.kill(job.id)).status).toBe('killed');
    expect(await codeOf(sb.jobs.kill('nope'))).toBe('JOB_NOT_FOUND');
  });

  it('refuses reads larger than maxReadBytes unless a length is given', async () => {
    const sb = await createMemoryProvider({ limits: { maxReadBytes: 4 } }).create({
      tenantId: 't',
      agentId: 'a',
    });
    await sb.fs.writeFile('big', '0123456789');
    expect(await codeOf(sb.fs.readFile('big'))).toBe('FILE_TOO_LARGE');
    expect((await sb.fs.readFile('big', { offset: 2, length: 100 })).toString()).toBe('2345');
  });
});
