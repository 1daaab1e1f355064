// Write scopes hold for a teammate that does not cooperate (issue 28), over real HTTP, real
// containers and the real isolate host, the test playing every agent's client. The lead gives alice
// a task scoped to docs/; alice then tries each way out that once worked: editing her task's
// write_scopes, creating and claiming a task of her own, claiming another scoped task, releasing
// (and completing) her task, and starting a child (which holds no task). Every write outside docs/
// is WRITE_SCOPE and no file lands outside it. Only the lead widens what she may write (reassigning
// her a task scoped to src/), and her child follows her.
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from '../api/served.ts';

const service = served('write-scopes');

let server: Running;
let key: string;

const http = async (method: string, path: string, body?: unknown): Promise<Loose> => {
  const res = await json(server, key, method, path, body);
  expect(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`).toBe(true);
  return res.json;
};

let n = 0;
const call = async (agentId: string, name: string, args: unknown = {}): Promise<Loose> =>
  (await http('POST', `/v1/agents/${agentId}/calls`, { calls: [{ id: `c${++n}`, name, arguments: args }] }))
    .results[0];
const ok = async (agentId: string, name: string, args: unknown = {}): Promise<Loose> => {
  const result = await call(agentId, name, args);
  expect(result.ok, `${name}: ${JSON.stringify(result.error)}`).toBe(true);
  return result.value;
};
const write = (agentId: string, file_path: string) => call(agentId, 'write', { file_path, content: 'x\n' });
const codeOf = (result: Loose): string => (result.ok ? 'ok' : result.error.code);

it('keeps a scoped teammate inside the scope its lead gave, whatever it does; only the lead widens it', async () => {
  server = await service.start();
  key = (await server.store.tenants.createTenant('scopes')).apiKey;
  const lead = (await http('POST', '/v1/agents', { teams: true, subagents: true })).id as string;
  const alice = (
    await ok(lead, 'spawn_teammate', { name: 'alice', description: 'Docs', prompt: 'Write the docs.' })
  ).agent_id as string;
  const docs = await ok(lead, 'team_task_create', {
    subject: 'Docs',
    description: 'Write docs/',
    write_scopes: ['docs'],
  });
  await ok(alice, 'team_task_update', { task_id: docs.task_id, expected_revision: 1, action: 'claim' });
  expect(codeOf(await write(alice, 'docs/a.md'))).toBe('ok');
  expect(codeOf(await write(alice, 'src/1.ts'))).toBe('WRITE_SCOPE');

  // 1. Her own task's write_scopes are the lead's to set.
  const widened = await call(alice, 'team_task_update', {
    task_id: docs.task_id,
    expected_revision: 2,
    action: 'edit',
    write_scopes: ['src'],
  });
  expect(widened.error).toMatchObject({ code: 'DENIED', message: expect.stringMatching(/team lead/) });

  // 2. A task of her own: no scopes of her choosing; an unscoped one frees nothing.
  const mine = await call(alice, 'team_task_create', {
    subject: 'Mine',
    description: 'src',
    write_scopes: ['src'],
  });
  expect(mine.error?.code).toBe('DENIED');
  const unscoped = await ok(alice, 'team_task_create', { subject: 'Mine', description: 'anything' });
  await ok(alice, 'team_task_update', { task_id: unscoped.task_id, expected_revision: 1, action: 'claim' });
  expect(codeOf(await write(alice, 'src/2.ts'))).toBe('WRITE_SCOPE');

  // 3. Claiming another scoped task the lead left open only narrows her further.
  const code = await ok(lead, 'team_task_create', {
    subject: 'Code',
    description: 'Write src/',
    write_scopes: ['src'],
  });
  await ok(alice, 'team_task_update', { task_id: code.task_id, expected_revision: 1, action: 'claim' });
  const refused = await write(alice, 'src/3.ts');
  expect(codeOf(refused)).toBe('WRITE_SCOPE');
  expect(refused.error.message).toMatch(/Your team lead gave you write scopes.*\(docs\)/);

  // 4. Releasing or completing every task leaves her confined.
  await ok(alice, 'team_task_update', { task_id: code.task_id, expected_revision: 2, action: 'release' });
  await ok(alice, 'team_task_update', { task_id: docs.task_id, expected_revision: 2, action: 'release' });
  await ok(alice, 'team_task_update', {
    task_id: unscoped.task_id,
    expected_revision: 2,
    action: 'complete',
  });
  expect(codeOf(await write(alice, 'src/4.ts'))).toBe('WRITE_SCOPE');
  expect(codeOf(await write(alice, 'docs/b.md'))).toBe('ok');

  // 5. A child she starts holds no task and writes only where she may.
  const child = (
    await ok(alice, 'subagent', { description: 'helper', prompt: 'Help.', run_in_background: true })
  ).agent_id as string;
  const childWrite = await write(child, 'src/5.ts');
  expect(codeOf(childWrite)).toBe('WRITE_SCOPE');
  expect(childWrite.error.message).toMatch(new RegExp(`started by agent ${alice}.*docs`));
  expect(codeOf(await write(child, 'docs/c.md'))).toBe('ok');

  // The lead widens her grant by assigning her the src task; her child follows.
  await ok(lead, 'team_task_update', {
    task_id: code.task_id,
    expected_revision: 3,
    action: 'reassign',
    owner: 'alice',
  });
  expect(codeOf(await write(alice, 'src/6.ts'))).toBe('ok');
  expect(codeOf(await write(child, 'src/7.ts'))).toBe('ok');
  expect(codeOf(await write(alice, 'README.md'))).toBe('WRITE_SCOPE');

  const files = await call(lead, 'bash', {
    command: 'cd src && ls; cd ../docs && ls; ls .. | grep -v "^docs$\\|^src$" || true',
    description: 'ls',
  });
  expect(files.content[0].text.split(/\s+/).filter(Boolean)).toEqual([
    '6.ts',
    '7.ts',
    'a.md',
    'b.md',
    'c.md',
  ]);
  await http('DELETE', `/v1/agents/${lead}`);
});
