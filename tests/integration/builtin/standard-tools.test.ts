// The standard preset's sandbox tools as a model uses them: through the pipeline, on a real
// container of the sandbox image (sandboxd over the attach stream).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { createRegistry, type ToolResult, type ToolScope } from '../../../host/tools/index.ts';
import { standardSandboxTools } from '../../unit/builtin/standard-tools.ts';
import { dockerFixture } from '../sandbox/fixtures.ts';

const fixture = dockerFixture();
const provider = fixture.provider();
let sandbox: Sandbox;
let scope: ToolScope;

const batch = (calls: Array<[string, Record<string, unknown>]>): Promise<ToolResult[]> =>
  scope.execute(
    calls.map(([name, args], i) => ({ id: `c${i}`, name, arguments: args })),
    { agent: { id: 'agent-std', sessionId: 'session-std', services: { sandbox } }, log: null },
  );
const call = async (name: string, args: Record<string, unknown>): Promise<ToolResult> =>
  (await batch([[name, args]]))[0]!;
const text = (result: ToolResult): string =>
  result.content.map((p) => (p.type === 'text' ? p.text : '')).join('');

beforeAll(async () => {
  sandbox = await provider.create({ tenantId: 'tenant-std', agentId: `std-${fixture.runId}` });
  const registry = createRegistry();
  for (const tool of standardSandboxTools()) registry.global.register(tool);
  scope = registry.global.child('agent');
});

afterAll(async () => {
  await provider.close();
  await fixture.sweep();
});

describe('standard tools on the docker provider', () => {
  it('bash runs in the workspace as the agent user and reports exit codes', async () => {
    const ok = await call('bash', { command: 'pwd; id -un', description: 'where am I' });
    expect(text(ok)).toBe('/workspace\nagent');
    const failed = await call('bash', { command: 'echo oops >&2; exit 3', description: 'fail' });
    expect(failed.ok).toBe(true);
    expect(text(failed)).toBe('oops\nExit code: 3');
  });

  it('bash kills a command at its timeout', async () => {
    const result = await call('bash', { command: 'sleep 30', description: 'hang', timeoutMs: 500 });
    expect(text(result)).toContain('[command timed out and was killed]');
  });

  it('write, edit, read, grep and glob see the same files as bash', async () => {
    const results = await batch([
      ['write', { file_path: 'src/app.ts', content: 'const port = 3000\nexport { port }\n' }],
      ['edit', { file_path: 'src/app.ts', old_string: 'const port = 3000', new_string: 'const port = 8080' }],
      ['read', { file_path: 'src/app.ts' }],
      ['grep', { pattern: 'port = \\d+', include: '*.ts' }],
      ['glob', { pattern: '**/*.ts' }],
      ['bash', { command: 'cat src/app.ts | head -1', description: 'check' }],
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, true, true, true, true, true]);
    expect(text(results[2]!)).toBe('1\tconst port = 8080\n2\texport { port }');
    expect(text(results[3]!)).toBe('/workspace/src/app.ts:1:const port = 8080');
    expect(results[4]!.value).toEqual(['/workspace/src/app.ts']);
    expect(text(results[5]!)).toBe('const port = 8080');
  });

  it('a file written by bash is read back by read', async () => {
    await call('bash', { command: "printf 'a\\nb\\n' > made-by-bash.txt", description: 'make a file' });
    expect(text(await call('read', { file_path: '/workspace/made-by-bash.txt' }))).toBe('1\ta\n2\tb');
  });

  it('background jobs: start, list, wait for output, kill', async () => {
    const started = await call('bash', {
      command: 'echo begin; sleep 0.3; echo end',
      description: 'job',
      run_in_background: true,
    });
    const jobId = (started.value as { jobId: string }).jobId;
    expect(jobId).toBeTruthy();
    const listed = await call('job_list', {});
    expect((listed.value as Array<{ id: string }>).map((j) => j.id)).toContain(jobId);
    const output = await call('job_output', { job_id: jobId, wait: true, timeout_ms: 10_000 });
    expect(output.value).toMatchObject({ status: 'exited', exitCode: 0, output: 'begin\nend\n' });

    const long = await call('bash', { command: 'sleep 600', description: 'long', run_in_background: true });
    const longId = (long.value as { jobId: string }).jobId;
    const killed = await call('job_kill', { job_id: longId, reason: 'test' });
    expect(killed.ok).toBe(true);
    const after = await call('job_output', { job_id: longId, wait: true, timeout_ms: 5000 });
    expect((after.value as { status: string }).status).not.toBe('running');
  });

  it('read refuses a binary file the agent made', async () => {
    await call('bash', { command: "printf 'a\\0b' > blob.bin", description: 'binary' });
    expect(text(await call('read', { file_path: 'blob.bin' }))).toMatch(/^Error: blob.bin is a binary file/);
  });
});
