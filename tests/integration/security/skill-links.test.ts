// The `skill` loader's copy is a write the service makes on its own inside a workspace, so it never
// follows a symlink and it respects plan mode (issue 28), over real HTTP and a real container's
// sandboxd. A `.skills -> src` link planted by the agent once made a load delete src/<name>/ and
// write the package there; now the load is refused (FORBIDDEN naming the link) and src is intact.
// A link at `.skills/<name>` is replaced, never followed (nor by a rollback across that load). In
// plan mode nothing is copied at all.
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from '../api/served.ts';

const service = served('skill-links');

let server: Running;
let key: string;

const SKILL_MD = '---\nname: lint\ndescription: "Lint the code."\n---\n# Lint\n\nRun the linter.\n';

const skillTar = async (): Promise<Buffer> => {
  const p = pack();
  p.entry({ name: 'SKILL.md' }, SKILL_MD);
  p.entry({ name: 'rules.md' }, 'No tabs.\n');
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of Readable.from(p)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

const http = async (method: string, path: string, body?: unknown): Promise<Loose> => {
  const res = await json(server, key, method, path, body);
  expect(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`).toBe(true);
  return res.json;
};

let n = 0;
const call = async (agentId: string, name: string, args: unknown): Promise<Loose> =>
  (await http('POST', `/v1/agents/${agentId}/calls`, { calls: [{ id: `c${++n}`, name, arguments: args }] }))
    .results[0];
const sh = async (agentId: string, command: string): Promise<string> => {
  const result = await call(agentId, 'bash', { command, description: command });
  expect(result.ok, JSON.stringify(result.error)).toBe(true);
  return result.content[0].text.trim();
};

it('never writes through a link planted in the workspace, and copies nothing in plan mode', async () => {
  server = await service.start();
  key = (await server.store.tenants.createTenant('skills')).apiKey;
  const res = await fetch(`${server.url}/v1/skills/lint`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/x-tar' },
    body: new Uint8Array(await skillTar()),
  });
  expect(res.status).toBe(201);
  const agent = (await http('POST', '/v1/agents', { preset: 'standard' })).id as string;

  // `.skills -> src`: the load is refused and src/lint/ is untouched.
  await sh(agent, 'mkdir -p src/lint && echo keep > src/lint/keep.txt && ln -s src .skills && echo ok');
  const planted = await call(agent, 'skill', { name: 'lint' });
  expect(planted.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/symlink/) });
  expect(await sh(agent, 'ls src/lint')).toBe('keep.txt');

  // `.skills/lint -> ../src/lint`: the link itself is replaced by the package, src stays as it was.
  await sh(agent, 'rm .skills && mkdir .skills && ln -s ../src/lint .skills/lint && echo ok');
  const loaded = await call(agent, 'skill', { name: 'lint' });
  const loadId = `c${n}`;
  expect(loaded.ok, JSON.stringify(loaded.error)).toBe(true);
  expect(loaded.value).toMatchObject({ copied: true, files: ['SKILL.md', 'rules.md'] });
  expect(await sh(agent, 'ls src/lint; test -L .skills/lint || ls .skills/lint')).toBe(
    'keep.txt\nSKILL.md\nrules.md',
  );
  // A rollback across that load (it is a tracked call) removes what it wrote, never through the
  // link it replaced: src/lint stays as it was.
  const undone = await http('POST', `/v1/agents/${agent}/rollback`, { callId: loadId });
  expect(undone.removed).toEqual(['/workspace/.skills/lint/SKILL.md', '/workspace/.skills/lint/rules.md']);
  expect(await sh(agent, 'ls src/lint; ls -A .skills/lint; echo end')).toBe('keep.txt\nend');

  // Plan mode: the instructions, and no write at all.
  await sh(agent, 'rm -r .skills && echo ok');
  await http('PUT', `/v1/agents/${agent}/plan-mode`, { planMode: true });
  const planning = await call(agent, 'skill', { name: 'lint' });
  expect(planning.ok, JSON.stringify(planning.error)).toBe(true);
  expect(planning.value).toMatchObject({
    copied: false,
    instructions: expect.stringContaining('Run the linter'),
  });
  expect(planning.content[0].text).toMatch(/plan mode is on, so its files were not copied/);
  await http('PUT', `/v1/agents/${agent}/plan-mode`, { planMode: false });
  expect(await sh(agent, 'ls -A')).toBe('src');
  await http('DELETE', `/v1/agents/${agent}`);
});
