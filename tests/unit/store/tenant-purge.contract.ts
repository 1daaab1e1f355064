// The TenantPurgeStore contract (what is left of a deleted tenant, removed in slices): every
// backend runs it on a whole Store through a one-line test. A tenant with an agent, a log, egress
// settings, a skill, a schedule and a second key is purged to nothing, slice by slice, while the
// other tenant's rows stay as they were; an agent that is live or still holds a sandbox is kept.
import { describe, expect, it } from 'vitest';
import type { Store } from '../../../host/store/store.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface PurgeHarness {
  name: string;
  open(): Promise<{ store: Store; close(): Promise<void> | void }>;
}

const fill = async (store: Store, name: string) => {
  const tenant = await store.tenants.createTenant(name);
  await store.tenants.createKey(tenant.id, { name: 'second' });
  const agent = await store.agents.create({
    tenantId: tenant.id,
    preset: 'standard',
    mode: 'direct',
    config: {},
  });
  await store.events.append(
    Array.from({ length: 30 }, (_, i) => ({
      sessionId: agent.id,
      type: 'message.user',
      surface: 'current' as const,
      data: { text: `words of ${name} number ${i}`, big: 'x'.repeat(i === 0 ? 40_000 : 1) },
    })),
  );
  await store.events.flush();
  await store.egress.put(tenant.id, { allow: [{ host: 'example.com' }] });
  await store.skills.put(
    tenant.id,
    {
      name: 'sk',
      description: 'a skill',
      digest: 'd'.repeat(64),
      bytes: 5,
      instructions: 'do it',
      files: [{ path: 'SKILL.md', mode: 0o644, content: Buffer.from('hello') }],
    },
    10,
  );
  await store.schedules.create(
    {
      tenantId: tenant.id,
      agentId: agent.id,
      prompt: 'p',
      kind: 'after',
      spec: { after_seconds: 60 },
      nextAt: Date.now() + 60_000,
    },
    10,
  );
  return { tenant, agent };
};

export const runTenantPurgeContract = (harness: PurgeHarness) => {
  describe(`TenantPurgeStore contract (${harness.name})`, () => {
    const open = closedAfterEach(() => harness.open());

    it("removes every row of the tenant in slices and none of another's", async () => {
      const { store } = await open();
      const gone = await fill(store, 'gone');
      const kept = await fill(store, 'kept');
      const before = await store.tenantPurge.remaining(kept.tenant.id);
      const left = await store.tenantPurge.remaining(gone.tenant.id);
      expect(Object.keys(left)).toEqual(
        expect.arrayContaining([
          'events',
          'sessions',
          'agents',
          'payloads',
          'tenant_egress',
          'skills',
          'skill_files',
          'schedules',
          'api_keys',
        ]),
      );
      // A live agent is not the purge's: its row stays until the agent service deleted it.
      let slices = 0;
      while ((await store.tenantPurge.purgeSlice(gone.tenant.id, 4)) > 0) slices++;
      expect(slices).toBeGreaterThan(8); // 30 events alone take 8 slices of 4
      expect(await store.tenantPurge.remaining(gone.tenant.id)).toEqual({ agents: 1 });
      // Deleted but still holding a sandbox: kept (the reaper's pointer to its container).
      await store.agents.markDeleted(gone.tenant.id, gone.agent.id);
      await store.agents.setSandboxId(gone.agent.id, 'sandbox-1');
      expect(await store.tenantPurge.purgeSlice(gone.tenant.id, 4)).toBe(0);
      await store.agents.setSandboxId(gone.agent.id, undefined);
      expect(await store.tenantPurge.purgeSlice(gone.tenant.id, 4)).toBe(1);
      expect(await store.tenantPurge.remaining(gone.tenant.id)).toEqual({});
      expect(await store.tenantPurge.purgeSlice(gone.tenant.id, 4)).toBe(0);

      expect(await store.tenantPurge.remaining(kept.tenant.id)).toEqual(before);
      expect((await store.events.list(kept.agent.id)).length).toBe(30);
      expect((await store.skills.list(kept.tenant.id)).map((s) => s.name)).toEqual(['sk']);
      expect(await store.egress.get(kept.tenant.id)).toBeDefined();
      expect((await store.tenants.getTenant(gone.tenant.id))?.name).toBe('gone'); // the row stays
    });
  });
};
