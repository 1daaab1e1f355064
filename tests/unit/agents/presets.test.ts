// A preset is defined only in its entry (host/agents/presets/<name>.ts): what an agent of each
// preset sees is exactly what its entry says of the installed tools (admitted globals in the
// order they were installed, then its own additions), it starts in the entry's default mode, and
// no other module of host/ names a preset or groups tools by one.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { admitsTool, PRESETS, presetEntry } from '../../../host/agents/presets/index.ts';
import type { IsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';

// Describing tools runs no program: an isolate host that is never called is enough to install
// code mode and the workflow tools, so that every builtin tool is in the catalog.
const isolates = {
  limits: {},
  run: () => Promise.reject(new Error('no program runs in this test')),
  workerPids: () => [],
  close: async () => {},
} as unknown as IsolateHost;
const store = openStore({ path: ':memory:' });
const { registry, agents } = assembleAgents({ store, sandboxes: createMemoryProvider(), isolates });
const tenant = (await store.tenants.createTenant('t')).id;
afterAll(async () => {
  await agents.close(0);
  store.close();
});

const HOST = fileURLToPath(new URL('../../../host/', import.meta.url));
const PRESETS_DIR = 'agents/presets/';

describe('presets', () => {
  it('each exposes exactly what its entry admits of the installed tools, then what it adds', async () => {
    const installed = registry.global.definitions().map((d) => d.name);
    expect(installed).toEqual(expect.arrayContaining(['bash', 'str_replace_editor', 'workflow']));
    for (const preset of PRESETS) {
      const entry = presetEntry(preset);
      const added = entry.adds.map((d) => d.name);
      // The child-control and team tools are the agent's own (host/teams/tools.ts), in the
      // preset's tier: with subagents and teams, the team-aware ones replace three of them.
      const children = admitsTool(entry, 'subagent')
        ? [
            'subagent',
            'subagent_fork',
            'spawn_teammate',
            'list_agents',
            'send_message',
            'followup_task',
            'interrupt_agent',
            'wait_agent',
          ]
        : [];
      const expected = [
        ...installed.filter((name) => admitsTool(entry, name) && !added.includes(name)),
        ...added,
        ...children,
      ];
      const agent = await agents.create(tenant, { preset, mode: 'native', subagents: true, teams: true });
      const seen = (await agents.tools(agent)).tools.map((t) => t.name);
      expect(seen, preset).toEqual(expected);
      expect(seen.length, preset).toBeGreaterThan(0);
    }
  });

  it("an agent created without a mode gets its preset's default mode", async () => {
    for (const preset of PRESETS) {
      const agent = await agents.create(tenant, { preset });
      expect(agent.mode, preset).toBe(presetEntry(preset).defaultMode);
    }
  });

  it('are named nowhere in host/ but in their entries, and the builtin tools are not grouped by one', async () => {
    // `code` is a presentation mode too, so only the other names are looked for.
    const names = PRESETS.filter((p) => p !== 'code').join('|');
    const named = new RegExp(`['"\`](${names})['"\`]`);
    const files = readdirSync(HOST, { recursive: true, encoding: 'utf8' }).filter(
      (file) => file.endsWith('.ts') && !file.startsWith(PRESETS_DIR),
    );
    expect(files.length).toBeGreaterThan(50);
    for (const file of files) {
      const code = readFileSync(`${HOST}${file}`, 'utf8')
        .split('\n')
        .filter((line) => !/^\s*(\/\/|\/?\*)/.test(line))
        .join('\n');
      expect(named.test(code), `host/${file} names a preset`).toBe(false);
    }
    const builtin = await import('../../../host/tools/builtin/index.ts');
    for (const name of Object.keys(builtin))
      expect(name, 'host/tools/builtin/index.ts export').not.toMatch(new RegExp(`preset|${names}`, 'i'));
  });
});
