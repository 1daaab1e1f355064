// The control-plane instance's identity: a short random id made once by migration 2 and kept in
// the store's `meta` table. Everything an instance creates on a shared Docker engine carries it
// (host/sandbox/docker), so two instances on one engine never adopt or remove each other's work.
// Invariant: the id never changes for a store; two stores made independently get different ids
// (48 random bits). A copied data directory copies the id too: run a copy only after the original
// has stopped for good.
import { SandboxError } from '../errors.ts';
import { type Database, guarded } from './db.ts';

/** What an instance id looks like; the docker provider puts it into names and labels. */
export const INSTANCE_ID = /^[a-z0-9]{4,16}$/;

/** This store's instance id. Throws STORE_FAILED when the row is missing or damaged. */
export const instanceIdOf = (db: Database): string => {
  const row = guarded('read the instance id', () =>
    db.prepare("SELECT value FROM meta WHERE key = 'instance_id'").all(),
  )[0] as { value?: unknown } | undefined;
  const id = row?.value;
  if (typeof id !== 'string' || !INSTANCE_ID.test(id)) {
    throw new SandboxError(
      'STORE_FAILED',
      `The store has no valid instance id (meta.instance_id = ${JSON.stringify(id ?? null)}); it was edited by hand or damaged.`,
      { data: { instanceId: id ?? null } },
    );
  }
  return id;
};
