// State and usage in the console, read through the public API: the agents list shows each agent's
// sandbox state and last call, the agent page its log counts and disk, and the operator's view the
// disk of every workspace.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ADMIN_KEY, type Api, makeApi } from '../api/harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(() => api.close());

const signIn = async (key: string, role = 'tenant'): Promise<string> => {
  const res = await api.app.request('/console/signin', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://localhost' },
    body: new URLSearchParams({ key, role }).toString(),
  });
  expect(res.status).toBe(303);
  return (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
};
const page = async (path: string, cookie: string) =>
  (await api.app.request(path, { headers: { cookie } })).text();
const cell = (html: string, attribute: string) => new RegExp(`<td ${attribute}>([^<]*)</td>`).exec(html)?.[1];

it('shows the state of each agent, and the usage of one, as calls change them', async () => {
  const idle = await api.createAgent(api.keyA);
  const used = await api.createAgent(api.keyA, { sandbox: { diskMb: 16 } });
  const cookie = await signIn(api.keyA);
  expect(await page(`/console/agents/${used.id}`, cookie)).toContain(
    '<td data-state="none" data-usage="state">none</td>',
  );

  await api.call(api.keyA, used.id, [
    { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'x'.repeat(2048) } },
  ]);
  const list = await page('/console/agents', cookie);
  const row = (id: string) => new RegExp(`<tr data-agent="${id}">.*?</tr>`).exec(list)?.[0] ?? '';
  expect(row(idle.id)).toContain('<td data-state="none">none</td>');
  expect(row(used.id)).toContain('<td data-state="ready">ready</td>');

  const agentPage = await page(`/console/agents/${used.id}`, cookie);
  expect(cell(agentPage, 'data-usage="calls"')).toBe('1');
  expect(cell(agentPage, 'data-usage="disk"')).toBe('2 KiB of 16 MiB (0%)');
  expect(cell(agentPage, 'data-usage="memory"')).toBe('not measured');
});

it("gives the operator every tenant's workspaces with their disk", async () => {
  const a = await api.createAgent(api.keyA, { sandbox: { diskMb: 16 } });
  const b = await api.createAgent(api.keyB);
  await api.call(api.keyA, a.id, [
    { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'x'.repeat(4096) } },
  ]);
  await api.call(api.keyB, b.id, [{ id: 'w', name: 'write', arguments: { file_path: 'b', content: 'y' } }]);
  const html = await page('/console/operator', await signIn(ADMIN_KEY, 'operator'));
  expect(html).toContain('Disk per workspace');
  const row = (id: string) => new RegExp(`<tr data-workspace="${id}">.*?</tr>`).exec(html)?.[0] ?? '';
  expect(row(a.id)).toContain('4 KiB of 16 MiB');
  // The memory provider measures no disk without a size (as docker volumes): said, not guessed.
  expect(row(b.id)).toContain('not measured');
});
