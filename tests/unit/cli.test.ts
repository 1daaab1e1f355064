// The command line as people run it: `./host/cli.ts` (the package's bin) lists every command in
// --help, doctor included; under a Node older than 24 on PATH it says so in one line and exits 1
// instead of failing in Node's loader on the .ts extension; and client-side variables (DSH_URL,
// DSH_KEY, DSH_KEY_FILE) in the environment are not reported as unknown settings at start.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { unknownSettings } from '../../host/config.ts';

const CLI = fileURLToPath(new URL('../../host/cli.ts', import.meta.url));
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'dsh-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `./host/cli.ts args` with `bin` first on PATH; its exit code and output. */
async function cli(bin: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` };
  return run(CLI, args, { env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

describe('the command line', () => {
  it('--help lists serve, the admin commands and doctor', async () => {
    const { code, stdout } = await cli(dirname(process.execPath), ['--help']);
    expect(code).toBe(0);
    for (const command of ['serve', 'tenants create <name>', 'keys revoke <tenant> <key>', 'doctor'])
      expect(stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
  });

  it('under an older Node says in one line that it needs Node 24, and exits 1', async () => {
    // A node that answers as Node 18 would, and fails the test if anything runs on it.
    writeFileSync(
      join(dir, 'node'),
      '#!/bin/sh\ncase "$1" in -p) echo 18;; --version) echo v18.20.8;; *) echo ran on the old node; exit 99;; esac\n',
    );
    chmodSync(join(dir, 'node'), 0o755);
    const { code, stdout, stderr } = await cli(dir, ['serve']);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr.trim().split('\n')).toEqual([expect.stringContaining('needs Node.js 24 or later')]);
    expect(stderr).toContain('v18.20.8');
  });

  it('does not report client-side variables as unknown settings', () => {
    expect(
      unknownSettings({ DSH_URL: 'http://127.0.0.1:7070', DSH_KEY: 'k', DSH_KEY_FILE: 'f', DSH_PROT: '1' }),
    ).toEqual(['DSH_PROT']);
  });
});
