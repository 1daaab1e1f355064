// Programs on pipes (stdioOpen/stdioWrite) over a local sandboxd: the pipe a stdio MCP server
// speaks on. What the host sees: its stdout as written, its stdin fed in order, its exit, and that
// ending the open (abort or a new session) ends the program and everything it started.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StdioEnd } from '../../../host/sandbox/types.ts';
import { until } from '../../helpers/until.ts';
import { gone, useLocalSandboxd } from './harness.ts';

const local = useLocalSandboxd();

describe('sandboxd stdio programs', () => {
  it('echoes lines written to stdin back on stdout, in order, and reports its exit', async () => {
    let out = '';
    let err = '';
    const p = local.c.stdio.open({
      command: [
        'bash',
        '-c',
        'echo started >&2; while read -r l; do [ "$l" = bye ] && exit 3; echo "got $l"; done',
      ],
      onStdout: (b) => {
        out += b.toString();
      },
      onStderr: (b) => {
        err += b.toString();
      },
    });
    for (let i = 0; i < 20; i++) await p.write(Buffer.from(`line${i}\n`));
    await until(() => out.split('\n').length > 20, { what: 'all 20 answers' });
    expect(out).toBe(Array.from({ length: 20 }, (_, i) => `got line${i}\n`).join(''));
    await p.write(Buffer.from('bye\n'));
    expect(await p.ended).toEqual({ exitCode: 3, signal: null });
    expect(err).toBe('started\n');
    await expect(p.write(Buffer.from('late\n'))).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('an aborted open kills the program and what it started', async () => {
    const ac = new AbortController();
    const p = local.c.stdio.open({
      command: ['bash', '-c', 'sleep 100 & echo $! > bg.pid; echo $$ > fg.pid; cat'],
      signal: ac.signal,
      onStdout: () => {},
    });
    await p.write(Buffer.from('x\n'));
    await until(
      () => {
        try {
          return readFileSync(join(local.sd.root, 'bg.pid'), 'utf8').trim() !== '';
        } catch {
          return false;
        }
      },
      { what: 'the program started' },
    );
    const pids = ['bg.pid', 'fg.pid'].map((f) => Number(readFileSync(join(local.sd.root, f), 'utf8')));
    ac.abort();
    const end: StdioEnd = await p.ended;
    expect(end.error?.code).toBe('ABORTED');
    await until(() => pids.every(gone), { what: 'the program and its child are gone' });
  });

  it('a program that cannot start ends with its reason', async () => {
    const p = local.c.stdio.open({ command: ['/no/such/program'], onStdout: () => {} });
    const end = await p.ended;
    expect(end.exitCode === 127 || end.error !== undefined).toBe(true);
  });
});
