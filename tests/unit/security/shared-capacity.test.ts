// Capacity of the whole service that several tenants share (round 5 of the adversarial pass): a
// tenant's first request is not refused because other tenants each sit at their own limit.
import { describe, expect, it } from 'vitest';
import { createUploadSlots } from '../../../host/api/upload-slots.ts';

describe('archive upload slots', () => {
  it('leave a further tenant its first upload while eight tenants sit at their two each', () => {
    // Round 5 found: at the defaults (2 a tenant, 16 in all) eight tenants filled the spool.
    const slots = createUploadSlots({ perTenant: 2, total: 16 });
    const refused: string[] = [];
    for (let t = 0; t < 8; t++)
      for (let i = 0; i < 2; i++)
        try {
          slots.take(`t${t}`);
        } catch {
          refused.push(`t${t}`);
        }
    // Some of them were held to one (the rest is kept for tenants that have none)…
    expect(refused.length).toBeGreaterThan(0);
    // …so further tenants each get their first.
    for (let t = 8; t < 8 + refused.length; t++) expect(() => slots.take(`t${t}`)).not.toThrow();
    // A full service still refuses, and a slot given back is taken again.
    expect(() => slots.take('late')).toThrow(/The service/);
  });

  it('a lone tenant still takes its whole share of an idle service', () => {
    const slots = createUploadSlots({ perTenant: 2, total: 16 });
    expect(() => [slots.take('a'), slots.take('a')]).not.toThrow();
    const small = createUploadSlots({ perTenant: 2, total: 3 });
    expect(() => [small.take('a'), small.take('a')]).not.toThrow();
  });
});
