// What a store's instance id (`meta.instance_id`, instance.ts says what it is for) may look like,
// checked the same way on every backend: the libsql (instance.ts) and PostgreSQL (pg/instance.ts)
// readers keep only their SELECT. Imports no backend.
import { SandboxError } from '../errors.ts';

/** What an instance id looks like; the docker provider puts it into names and labels. */
export const INSTANCE_ID = /^[a-z0-9]{4,16}$/;

/** The stored value as an instance id. Throws STORE_FAILED when it is missing or damaged. */
export const checkInstanceId = (id: unknown): string => {
  if (typeof id !== 'string' || !INSTANCE_ID.test(id)) {
    throw new SandboxError(
      'STORE_FAILED',
      `The store has no valid instance id (meta.instance_id = ${JSON.stringify(id ?? null)}); it was edited by hand or damaged.`,
      { data: { instanceId: id ?? null } },
    );
  }
  return id;
};
