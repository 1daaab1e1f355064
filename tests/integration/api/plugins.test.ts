// Creator plugins end to end on the composition `serve` runs (issue 13 "Show"), with a real Docker
// sandbox, real isolate host and real plugin workers: a creator agent defines a plugin whose tool
// counts the words of a file in its container through the agent's own `read`; the tool is in
// GET /tools and in the tools.* SDK, runs directly and from run_code with the inner read logged
// under the plugin's provenance, an update changes it, and after a restart of the control plane on
// the same data directory the plugin is running again against the same container. Stop removes it.
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { WORD_COUNT } from '../../unit/plugins/helpers.ts';
import { json, served } from './served.ts';

const LINES = WORD_COUNT.replace(
  '{ words: content.split(/\\s+/).filter(Boolean).length }',
  "{ lines: content.split('\\n').length }",
);
const service = served('plugins');

let seq = 0;
const call = async (server: Running, key: string, agentId: string, name: string, args: unknown) => {
  const res = await json(server, key, 'POST', `/v1/agents/${agentId}/calls`, {
    calls: [{ id: `c${++seq}`, name, arguments: args }],
  });
  expect(res.status).toBe(200);
  const [result] = res.json.results as Loose[];
  expect(result?.error).toBeUndefined();
  return result as Loose;
};
const names = async (server: Running, key: string, agentId: string): Promise<string[]> =>
  (await json(server, key, 'GET', `/v1/agents/${agentId}/tools`)).json.tools.map((t: Loose) => t.name);

it('a creator plugin works against a real container and survives a restart of the control plane', async () => {
  const first = await service.start();
  const key = (await first.store.tenants.createTenant('plugins')).apiKey;
  const agentId = (await json(first, key, 'POST', '/v1/agents', { preset: 'creator', mode: 'both' })).json.id;
  await call(first, key, agentId, 'bash', {
    command: "printf 'the quick brown fox\\njumps over\\n' > notes.txt",
    description: 'write a file in the container',
  });

  const define = async (server: Running, plugin: unknown, host: string) =>
    (
      await call(server, key, agentId, 'cordis_define', {
        plugin,
        name: 'pkg',
        purpose: 'test',
        code: { host },
      })
    ).value;
  const words = await define(first, { kind: 'new', idPrefix: 'words' }, WORD_COUNT);
  const { pluginId } = words;
  const run = await call(first, key, agentId, 'cordis_run', {
    pluginId,
    packageId: words.packageId,
    mode: 'run',
  });
  expect(run.value).toMatchObject({ state: 'running', tools: ['count_words'] });

  // An ordinary tool: listed natively and in the tools.* SDK, called directly and from a program.
  const surface = (await json(first, key, 'GET', `/v1/agents/${agentId}/tools`)).json.tools as Loose[];
  expect(surface.map((t) => t.name)).toContain('count_words');
  expect(surface.find((t) => t.name === 'run_code')?.description).toContain('count_words');
  const direct = await call(first, key, agentId, 'count_words', { path: 'notes.txt' });
  expect(direct.value).toEqual({ words: 6 });
  const program = await call(first, key, agentId, 'run_code', {
    description: 'count the words',
    code: "return (await tools.count_words({ path: 'notes.txt' })).words * 10;",
  });
  expect(program.value.value).toBe(60);
  const events = (await json(first, key, 'GET', `/v1/agents/${agentId}/events`)).json.events as Loose[];
  const innerRead = events.find(
    (e) => e.type === 'tool.call' && e.data.name === 'read' && e.parentCallId === direct.id,
  );
  expect(innerRead?.data.provenance).toEqual({ kind: 'plugin', pluginId });

  // Update: the second package replaces the first's behaviour.
  const lines = await define(first, { kind: 'existing', pluginId }, LINES);
  await call(first, key, agentId, 'cordis_run', { pluginId, packageId: lines.packageId, mode: 'update' });
  expect((await call(first, key, agentId, 'count_words', { path: 'notes.txt' })).value).toEqual({ lines: 2 });

  // A new control plane on the same data directory: the plugin runs again, on the same container.
  await service.stop(first);
  const second = await service.start();
  expect(await names(second, key, agentId)).toContain('count_words');
  expect((await call(second, key, agentId, 'count_words', { path: 'notes.txt' })).value).toEqual({
    lines: 2,
  });
  const self = await call(second, key, agentId, 'cordis_inspect_self', { pluginId });
  expect(JSON.stringify(self.value)).toContain('running');

  // Stop removes the tool.
  await call(second, key, agentId, 'cordis_stop', { pluginId });
  expect(await names(second, key, agentId)).not.toContain('count_words');
}, 180_000);
