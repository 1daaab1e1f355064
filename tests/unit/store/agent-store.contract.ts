// The AgentStore contract: every implementation runs this suite through a one-line test file.
// Tests that need the storage to outlive the instance run only where the harness can `reopen`.
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../host/json.ts';
import type { AgentStoreInstance, Harness } from './harness.ts';

const lookup = {
  name: 'lookup_user',
  description: 'Looks a user up in the client',
  parameters: { type: 'object', properties: { id: { type: 'integer' } } },
};
const echo = { name: 'echo', description: 'echo', parameters: { type: 'object' }, timeoutMs: 50 };

export const runAgentStoreContract = (harness: Harness<AgentStoreInstance>) => {
  describe(`AgentStore contract (${harness.name})`, () => {
    let instance: AgentStoreInstance;
    const open = () => {
      instance = harness.open();
      return { agents: instance.agents, a: instance.tenant('a'), b: instance.tenant('b') };
    };
    afterEach(() => instance?.cleanup());
    const withTools = (tenantId: string, remoteTools: JsonValue[]) =>
      instance.agents.create({ tenantId, preset: 'p', mode: 'native', config: {}, remoteTools });

    it('creates agt_ agents that their tenant can read back', () => {
      const { agents, a } = open();
      const agent = agents.create({
        tenantId: a,
        preset: 'coder',
        mode: 'native',
        config: { restrict: ['bash'] },
      });
      expect(agent.id).toMatch(/^agt_/);
      expect(agent.remoteTools).toEqual([]);
      expect(agents.get(a, agent.id)).toEqual(agent);
      expect(agents.list(a)).toEqual([agent]);
    });

    it('says an agent is live exactly when its tenant can read it', () => {
      const { agents, a, b } = open();
      const agent = agents.create({ tenantId: a, preset: 'p', mode: 'native', config: {} });
      expect(agents.isLive(a, agent.id)).toBe(true);
      expect(agents.isLive(b, agent.id)).toBe(false);
      expect(agents.isLive(a, 'agt_unknown')).toBe(false);
      agents.markDeleted(a, agent.id);
      expect(agents.isLive(a, agent.id)).toBe(false);
    });

    it('lists oldest first, also on equal creation times', () => {
      instance = harness.open({ now: () => 1000 });
      const a = instance.tenant('a');
      const ids = [1, 2, 3].map(
        (n) => instance.agents.create({ tenantId: a, preset: 'p', mode: 'native', config: { n } }).id,
      );
      expect(instance.agents.list(a).map((x) => x.id)).toEqual(ids);
      expect(instance.agents.listAll().map((x) => x.id)).toEqual(ids);
    });

    it("answers another tenant's agent id as absent, and never lists or deletes it", () => {
      const { agents, a, b } = open();
      const agent = agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: {} });
      expect(agents.get(b, agent.id)).toBeUndefined();
      expect(agents.list(b)).toEqual([]);
      expect(agents.markDeleted(b, agent.id)).toBe(false);
      expect(agents.get(a, agent.id)).toBeDefined();
    });

    it('hides deleted agents from the tenant but still lists them for re-adoption when asked', () => {
      const { agents, a, b } = open();
      const gone = agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: {} });
      const kept = agents.create({ tenantId: b, preset: 'coder', mode: 'code', config: {} });
      agents.setSandboxId(gone.id, 'ctr_1');
      expect(agents.markDeleted(a, gone.id)).toBe(true);
      expect(agents.markDeleted(a, gone.id)).toBe(false);
      expect(agents.get(a, gone.id)).toBeUndefined();
      expect(agents.listAll().map((x) => x.id)).toEqual([kept.id]);
      expect(agents.listAll({ includeDeleted: true }).find((x) => x.id === gone.id)).toMatchObject({
        sandboxId: 'ctr_1',
        deletedAt: expect.any(Number),
      });
      agents.setSandboxId(gone.id, undefined);
      expect(agents.listAll({ includeDeleted: true }).find((x) => x.id === gone.id)).not.toHaveProperty(
        'sandboxId',
      );
    });

    it('refuses an agent for a tenant that does not exist with NOT_FOUND', () => {
      const { agents } = open();
      expect(() => agents.create({ tenantId: 'ten_nope', preset: 'p', mode: 'native', config: {} })).toThrow(
        expect.objectContaining({ code: 'NOT_FOUND' }),
      );
    });

    describe('remote tools', () => {
      it('keeps the remote tools an agent was created with', () => {
        const { agents, a } = open();
        const agent = withTools(a, [lookup]);
        expect(agent.remoteTools).toEqual([lookup]);
        expect(agents.get(a, agent.id)?.remoteTools).toEqual([lookup]);
        expect(agents.list(a)[0]?.remoteTools).toEqual([lookup]);
      });

      it('replaces the whole list, in order, for the owning tenant only', () => {
        const { agents, a, b } = open();
        const agent = withTools(a, [lookup]);
        expect(agents.setRemoteTools(a, agent.id, [echo, lookup])).toBe(true);
        expect(agents.get(a, agent.id)?.remoteTools).toEqual([echo, lookup]);
        expect(agents.setRemoteTools(b, agent.id, [])).toBe(false);
        expect(agents.setRemoteTools(a, 'agt_nope', [])).toBe(false);
        expect(agents.get(a, agent.id)?.remoteTools).toEqual([echo, lookup]);
        expect(agents.setRemoteTools(a, agent.id, [])).toBe(true);
        expect(agents.get(a, agent.id)?.remoteTools).toEqual([]);
      });

      it('refuses to change a deleted agent', () => {
        const { agents, a } = open();
        const agent = agents.create({ tenantId: a, preset: 'p', mode: 'native', config: {} });
        agents.markDeleted(a, agent.id);
        expect(agents.setRemoteTools(a, agent.id, [lookup])).toBe(false);
        expect(agents.listAll({ includeDeleted: true })[0]?.remoteTools).toEqual([]);
      });

      it('stores copies: changing what was given or read back changes nothing stored', () => {
        const { agents, a } = open();
        const given = [structuredClone(lookup)];
        const agent = withTools(a, given);
        given[0]!.name = 'changed';
        (agent.remoteTools[0] as { name: string }).name = 'changed';
        const read = agents.get(a, agent.id)!;
        (read.remoteTools as unknown[]).push(echo);
        const replacement = [structuredClone(echo)];
        agents.setRemoteTools(a, agent.id, replacement);
        replacement[0]!.name = 'changed';
        expect(agents.get(a, agent.id)?.remoteTools).toEqual([echo]);
        expect(agents.setRemoteTools(a, agent.id, [lookup])).toBe(true);
        expect(agents.get(a, agent.id)?.remoteTools).toEqual([lookup]);
      });
    });

    it('keeps agents, their remote tools and their sandbox ids across a restart', (ctx) => {
      const { agents, a } = open();
      const reopen = instance.reopen;
      if (reopen === undefined) return ctx.skip();
      const agent = agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: { n: 1 } });
      agents.setSandboxId(agent.id, 'ctr_9');
      agents.setRemoteTools(a, agent.id, [lookup, echo]);
      const again = reopen();
      expect(again.get(a, agent.id)).toEqual({ ...agent, remoteTools: [lookup, echo], sandboxId: 'ctr_9' });
      again.setSandboxId(agent.id, undefined);
      expect(again.get(a, agent.id)).not.toHaveProperty('sandboxId');
    });

    it('keeps the links of children and teammates, and finds them by parent, team and id', (ctx) => {
      const { agents, a, b } = open();
      const lead = agents.create({ tenantId: a, preset: 'p', mode: 'native', config: { teams: true } });
      const child = agents.create({
        tenantId: a,
        preset: 'p',
        mode: 'native',
        config: {},
        links: { parentId: lead.id, role: 'child', depth: 1 },
      });
      const mate = agents.create({
        tenantId: a,
        preset: 'p',
        mode: 'native',
        config: {},
        links: { parentId: lead.id, role: 'teammate', depth: 1, teamId: lead.id, name: 'ann' },
      });
      expect(lead).not.toHaveProperty('links');
      expect(agents.get(a, mate.id)?.links).toEqual({
        parentId: lead.id,
        role: 'teammate',
        depth: 1,
        teamId: lead.id,
        name: 'ann',
      });
      expect(agents.children(a, lead.id).map((r) => r.id)).toEqual([child.id, mate.id]);
      expect(agents.teammates(a, lead.id).map((r) => r.id)).toEqual([mate.id]);
      expect(agents.children(b, lead.id)).toEqual([]);
      expect(agents.byId(child.id)).toEqual(child);
      agents.markDeleted(a, child.id);
      expect(agents.byId(child.id)).toBeUndefined();
      expect(agents.children(a, lead.id).map((r) => r.id)).toEqual([mate.id]);
      const reopen = instance.reopen;
      if (reopen === undefined) return ctx.skip();
      expect(reopen().get(a, mate.id)).toEqual(mate);
    });
  });
};
