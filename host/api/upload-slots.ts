// How many archive uploads wait in the spool at once: an agent's archive (PUT /v1/agents/:id/archive)
// is spooled to the data disk and checked in full before anything is written (host/sandbox/tar.ts),
// up to its tar's bound (~166 MiB at the default 64 MiB upload limit; a skill's, PUT
// /v1/skills/:name, is bounded at ~5 MiB and takes no slot). A
// tenant that started its 16 requests' worth of uploads and stalled them held 2.6 GiB of the disk
// every tenant's log and workspaces share. A tenant holds at most `perTenant` slots, the service
// `total`; one more answers RATE_LIMITED (429, data: limit `archiveUploads`, max), at once and before
// its body is read, so the client may retry later. A tenant takes a second or later slot only while
// `reserve` more stay free (a quarter of the total): before, eight tenants at their two slots each
// filled the 16 and a ninth tenant's first upload was refused.
// Invariants: a slot is given back exactly once (release is idempotent); the counts never go
// negative; a tenant's refusal takes nothing from another tenant; a tenant holding no slot is
// refused only when the service is full.
import { SandboxError } from '../errors.ts';
import { reserveFor } from '../shares.ts';

export interface UploadSlots {
  /** Takes one of `tenantId`'s slots, or throws RATE_LIMITED; the returned function gives it back. */
  take(tenantId: string): () => void;
}

export const createUploadSlots = (limits: { perTenant: number; total: number }): UploadSlots => {
  const held = new Map<string, number>();
  let total = 0;
  const reserve = reserveFor(limits.total);
  const refuse = (max: number, whose: string): SandboxError =>
    new SandboxError(
      'RATE_LIMITED',
      `${whose} already ${max === 1 ? 'has an archive upload' : `has ${max} archive uploads`} being checked (at most ${max} at once); send this one when one of them has finished.`,
      { data: { limit: 'archiveUploads', max } },
    );
  return {
    take(tenantId) {
      const mine = held.get(tenantId) ?? 0;
      if (mine >= limits.perTenant) throw refuse(limits.perTenant, 'This tenant');
      if (total >= limits.total) throw refuse(limits.total, 'The service');
      if (mine > 0 && total + 1 > limits.total - reserve)
        throw new SandboxError(
          'RATE_LIMITED',
          `This tenant already has ${mine === 1 ? 'an archive upload' : `${mine} archive uploads`} being checked, and the service keeps its last ${reserve} slots for tenants that have none; send this one when one of yours has finished.`,
          { data: { limit: 'archiveUploads', max: mine } },
        );
      held.set(tenantId, mine + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (held.get(tenantId) ?? 1) - 1;
        if (left === 0) held.delete(tenantId);
        else held.set(tenantId, left);
      };
    },
  };
};
