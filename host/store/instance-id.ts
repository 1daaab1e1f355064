// What a control-plane instance id (`meta.instance_id`, instance.ts says what it is for) may look
// like: the one pattern for it. The store makes the id and checks it here the same way on every
// backend (the libsql (instance.ts) and PostgreSQL (pg/instance.ts) readers keep only their
// SELECT); everything else takes the store's id and checks it against this same pattern, through
// sandbox/nodes/remote/roles.ts (the node protocol's header and certificates, the docker provider's
// names, labels and snapshot folders, scripts/node-certs.ts). Imports no backend.
// Why these bounds: at most 16, so names made from it stay within the workspace name limit; at
// least 4, so a damaged or hand-edited value is not taken for one (the store makes 12 hex digits);
// lowercase letters and digits alone, so it has no dot (a folder named by one is never a file's
// name: docker/workspaces/loop-snapshots.ts) and is a valid part of a container's name.
import { SandboxError } from '../errors.ts';

/** What an instance id looks like (see the header). */
export const INSTANCE_ID = /^[a-z0-9]{4,16}$/;

/** INSTANCE_ID in words, for the messages that refuse one. */
export const INSTANCE_ID_TEXT = '4-16 lowercase letters or digits';

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
