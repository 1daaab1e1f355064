// The control-plane instance's identity: a short random id made once by migration 2 and kept in
// the store's `meta` table. Everything an instance creates on a shared Docker engine carries it
// (host/sandbox/docker), so two instances on one engine never adopt or remove each other's work.
// Invariant: the id never changes for a store; two stores made independently get different ids
// (48 random bits). A copied data directory copies the id too: run a copy only after the original
// has stopped for good.
import { type Database, guarded } from './db.ts';
import { checkInstanceId } from './instance-id.ts';

export { INSTANCE_ID } from './instance-id.ts';

/** This store's instance id. Throws STORE_FAILED when the row is missing or damaged. */
export const instanceIdOf = (db: Database): string => {
  const row = guarded('read the instance id', () =>
    db.prepare("SELECT value FROM meta WHERE key = 'instance_id'").all(),
  )[0] as { value?: unknown } | undefined;
  return checkInstanceId(row?.value);
};
