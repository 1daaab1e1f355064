// The AgentStore contract: every implementation runs this suite through a one-line test file, with
// its harness (agent-store.harness.ts) as an async factory. Tests that need the storage to outlive
// the instance run only where the harness can `reopen`.
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../host/json.ts';
import type { AgentStoreHarness, AgentStoreInstance } from './agent-store.harness.ts';

const lookup = {
  name: 'lookup_user',
  description: 'Looks a user up in the client',
  parameters: { type: 'object', properties: { id: { type: 'integer' } } },
};
const echo = { name: 'echo', description: 'echo', parameters: { type: 'object' }, timeoutMs: 50 };

export const runAgentStoreContract = (harness: AgentStoreHarness) => {
  describe(`AgentStore contract (${harness.name})`, () => {
    let instance: AgentStoreInstance | undefined;
    const open = async (options?: { now?: () => number }) => {
      instance = await harness.open(options);
      return {
        instance,
        agents: instance.agents,
        a: await instance.tenant('a'),
        b: await instance.tenant('b'),
      };
    };
    afterEach(async () => {
      await instance?.cleanup();
      instance = undefined;
    });
    const withTools = (tenantId: string, remoteTools: JsonValue[]) =>
      instance!.agents.create({ tenantId, preset: 'p', mode: 'native', config: {}, remoteTools });

    it('creates agt_ agents that their tenant can read back', async () => {
      const { agents, a } = await open();
      const agent = await agents.create({
        tenantId: a,
        preset: 'coder',
        mode: 'native',
        config: { restrict: ['bash'] },
      });
      expect(agent.id).toMatch(/^agt_/);
      expect(agent.remoteTools).toEqual([]);
      expect(await agents.get(a, agent.id)).toEqual(agent);
      expect(await agents.list(a)).toEqual([agent]);
    });

    it('says an agent is live exactly when its tenant can read it', async () => {
      const { agents, a, b } = await open();
      const agent = await agents.create({ tenantId: a, preset: 'p', mode: 'native', config: {} });
      expect(await agents.isLive(a, agent.id)).toBe(true);
      expect(await agents.isLive(b, agent.id)).toBe(false);
      expect(await agents.isLive(a, 'agt_unknown')).toBe(false);
      await agents.markDeleted(a, agent.id);
      expect(await agents.isLive(a, agent.id)).toBe(false);
    });

    it('lists oldest first, also on equal creation times', async () => {
      const { agents, a } = await open({ now: () => 1000 });
      const ids: string[] = [];
      for (const n of [1, 2, 3])
        ids.push((await agents.create({ tenantId: a, preset: 'p', mode: 'native', config: { n } })).id);
      expect((await agents.list(a)).map((x) => x.id)).toEqual(ids);
      expect((await agents.listAll()).map((x) => x.id)).toEqual(ids);
    });

    it("answers another tenant's agent id as absent, and never lists or deletes it", async () => {
      const { agents, a, b } = await open();
      const agent = await agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: {} });
      expect(await agents.get(b, agent.id)).toBeUndefined();
      expect(await agents.list(b)).toEqual([]);
      expect(await agents.markDeleted(b, agent.id)).toBe(false);
      expect(await agents.get(a, agent.id)).toBeDefined();
    });

    it('hides deleted agents from the tenant but still lists them for re-adoption when asked', async () => {
      const { agents, a, b } = await open();
      const gone = await agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: {} });
      const kept = await agents.create({ tenantId: b, preset: 'coder', mode: 'code', config: {} });
      await agents.setSandboxId(gone.id, 'ctr_1');
      expect(await agents.markDeleted(a, gone.id)).toBe(true);
      expect(await agents.markDeleted(a, gone.id)).toBe(false);
      expect(await agents.get(a, gone.id)).toBeUndefined();
      expect((await agents.listAll()).map((x) => x.id)).toEqual([kept.id]);
      expect((await agents.listAll({ includeDeleted: true })).find((x) => x.id === gone.id)).toMatchObject({
        sandboxId: 'ctr_1',
        deletedAt: expect.any(Number),
      });
      await agents.setSandboxId(gone.id, undefined);
      expect(
        (await agents.listAll({ includeDeleted: true })).find((x) => x.id === gone.id),
      ).not.toHaveProperty('sandboxId');
    });

    it('keeps a pause until it is cleared, for its own tenant only', async () => {
      const { agents, a, b } = await open();
      const agent = await agents.create({ tenantId: a, preset: 'p', mode: 'native', config: {} });
      const pause = { mode: 'freeze', at: 1234, by: 'idle' } as const;
      expect(await agents.setPaused(b, agent.id, pause)).toBe(false);
      expect((await agents.get(a, agent.id))?.paused).toBeUndefined();
      expect(await agents.setPaused(a, agent.id, pause)).toBe(true);
      expect((await agents.get(a, agent.id))?.paused).toEqual(pause);
      expect((await agents.list(a))[0]?.paused).toEqual(pause);
      expect(await agents.setPaused(a, agent.id, undefined)).toBe(true);
      expect(await agents.get(a, agent.id)).not.toHaveProperty('paused');
      await agents.markDeleted(a, agent.id);
      expect(await agents.setPaused(a, agent.id, pause)).toBe(false);
    });

    it('lists the live agents that have a sandbox by id, in pages', async () => {
      const { agents, a, b } = await open();
      const made = [];
      for (const tenantId of [a, b, a])
        made.push(await agents.create({ tenantId, preset: 'p', mode: 'native', config: {} }));
      const [one, two, three] = made as [(typeof made)[0], (typeof made)[0], (typeof made)[0]];
      await agents.setSandboxId(one.id, 'ctr_1');
      await agents.setSandboxId(two.id, 'ctr_2');
      await agents.setSandboxId(three.id, 'ctr_3');
      await agents.markDeleted(a, three.id);
      const ids = [one.id, two.id].sort();
      expect((await agents.withSandbox('', 10)).map((x) => x.id)).toEqual(ids);
      expect((await agents.withSandbox('', 1)).map((x) => x.id)).toEqual([ids[0]]);
      expect((await agents.withSandbox(ids[0] as string, 10)).map((x) => x.id)).toEqual([ids[1]]);
    });

    it('refuses an agent for a tenant that does not exist with NOT_FOUND', async () => {
      const { agents } = await open();
      await expect(
        agents.create({ tenantId: 'ten_nope', preset: 'p', mode: 'native', config: {} }),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    describe('remote tools', () => {
      it('keeps the remote tools an agent was created with', async () => {
        const { agents, a } = await open();
        const agent = await withTools(a, [lookup]);
        expect(agent.remoteTools).toEqual([lookup]);
        expect((await agents.get(a, agent.id))?.remoteTools).toEqual([lookup]);
        expect((await agents.list(a))[0]?.remoteTools).toEqual([lookup]);
      });

      it('replaces the whole list, in order, for the owning tenant only', async () => {
        const { agents, a, b } = await open();
        const agent = await withTools(a, [lookup]);
        expect(await agents.setRemoteTools(a, agent.id, [echo, lookup])).toBe(true);
        expect((await agents.get(a, agent.id))?.remoteTools).toEqual([echo, lookup]);
        expect(await agents.setRemoteTools(b, agent.id, [])).toBe(false);
        expect(await agents.setRemoteTools(a, 'agt_nope', [])).toBe(false);
        expect((await agents.get(a, agent.id))?.remoteTools).toEqual([echo, lookup]);
        expect(await agents.setRemoteTools(a, agent.id, [])).toBe(true);
        expect((await agents.get(a, agent.id))?.remoteTools).toEqual([]);
      });

      it('refuses to change a deleted agent', async () => {
        const { agents, a } = await open();
        const agent = await agents.create({ tenantId: a, preset: 'p', mode: 'native', config: {} });
        await agents.markDeleted(a, agent.id);
        expect(await agents.setRemoteTools(a, agent.id, [lookup])).toBe(false);
        expect((await agents.listAll({ includeDeleted: true }))[0]?.remoteTools).toEqual([]);
      });

      it('stores copies: changing what was given or read back changes nothing stored', async () => {
        const { agents, a } = await open();
        const given = [structuredClone(lookup)];
        const agent = await withTools(a, given);
        given[0]!.name = 'changed';
        (agent.remoteTools[0] as { name: string }).name = 'changed';
        const read = (await agents.get(a, agent.id))!;
        (read.remoteTools as unknown[]).push(echo);
        const replacement = [structuredClone(echo)];
        const replacing = agents.setRemoteTools(a, agent.id, replacement);
        replacement[0]!.name = 'changed';
        await replacing;
        expect((await agents.get(a, agent.id))?.remoteTools).toEqual([echo]);
        expect(await agents.setRemoteTools(a, agent.id, [lookup])).toBe(true);
        expect((await agents.get(a, agent.id))?.remoteTools).toEqual([lookup]);
      });
    });

    it('replaces the MCP servers as one list, for the live agent of its tenant only', async () => {
      const { agents, a, b } = await open();
      const agent = await agents.create({ tenantId: a, preset: 'p', mode: 'native', config: {} });
      const server = {
        name: 'git',
        transport: 'stdio',
        command: 'git-mcp',
        env: { TOKEN: 's3cret' },
        tools: [],
      };
      expect(agent.mcpServers).toEqual([]);
      expect(await agents.setMcpServers(a, agent.id, [server])).toBe(true);
      expect((await agents.get(a, agent.id))?.mcpServers).toEqual([server]);
      expect(await agents.setMcpServers(b, agent.id, [])).toBe(false);
      await agents.markDeleted(a, agent.id);
      expect(await agents.setMcpServers(a, agent.id, [])).toBe(false);
    });

    it('keeps agents, their remote tools and their sandbox ids across a restart', async (ctx) => {
      const { instance, agents, a } = await open();
      const reopen = instance.reopen;
      if (reopen === undefined) return ctx.skip();
      const agent = await agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: { n: 1 } });
      await agents.setSandboxId(agent.id, 'ctr_9');
      await agents.setRemoteTools(a, agent.id, [lookup, echo]);
      const again = await reopen();
      expect(await again.get(a, agent.id)).toEqual({
        ...agent,
        remoteTools: [lookup, echo],
        sandboxId: 'ctr_9',
      });
      await again.setSandboxId(agent.id, undefined);
      expect(await again.get(a, agent.id)).not.toHaveProperty('sandboxId');
    });

    it('answers true to exactly one of two stores deleting one agent at once', async (ctx) => {
      const { instance, agents, a } = await open();
      const reopen = instance.reopen;
      if (reopen === undefined) return ctx.skip();
      // A second store on the same storage: another replica on one database, or another process.
      const other = await reopen();
      const agent = await agents.create({ tenantId: a, preset: 'p', mode: 'native', config: {} });
      const answers = await Promise.all([agents.markDeleted(a, agent.id), other.markDeleted(a, agent.id)]);
      expect(answers.filter(Boolean)).toEqual([true]);
      expect(await other.setRemoteTools(a, agent.id, [lookup])).toBe(false);
      expect(await agents.isLive(a, agent.id)).toBe(false);
    });

    it('keeps the links of children and teammates, and finds them by parent, team and id', async (ctx) => {
      const { instance, agents, a, b } = await open();
      const lead = await agents.create({ tenantId: a, preset: 'p', mode: 'native', config: { teams: true } });
      const child = await agents.create({
        tenantId: a,
        preset: 'p',
        mode: 'native',
        config: {},
        links: { parentId: lead.id, role: 'child', depth: 1 },
      });
      const mate = await agents.create({
        tenantId: a,
        preset: 'p',
        mode: 'native',
        config: {},
        links: { parentId: lead.id, role: 'teammate', depth: 1, teamId: lead.id, name: 'ann' },
      });
      expect(lead).not.toHaveProperty('links');
      expect((await agents.get(a, mate.id))?.links).toEqual({
        parentId: lead.id,
        role: 'teammate',
        depth: 1,
        teamId: lead.id,
        name: 'ann',
      });
      expect((await agents.children(a, lead.id)).map((r) => r.id)).toEqual([child.id, mate.id]);
      expect((await agents.teammates(a, lead.id)).map((r) => r.id)).toEqual([mate.id]);
      expect(await agents.children(b, lead.id)).toEqual([]);
      expect(await agents.byId(child.id)).toEqual(child);
      await agents.markDeleted(a, child.id);
      expect(await agents.byId(child.id)).toBeUndefined();
      expect((await agents.children(a, lead.id)).map((r) => r.id)).toEqual([mate.id]);
      const reopen = instance.reopen;
      if (reopen === undefined) return ctx.skip();
      expect(await (await reopen()).get(a, mate.id)).toEqual(mate);
    });
  });
};
