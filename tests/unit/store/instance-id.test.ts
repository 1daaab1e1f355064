// One rule for a control-plane instance id (host/store/instance-id.ts): the store makes and checks
// it, and the node protocol, the docker provider's names and snapshot folders and the certificate
// script take exactly the ids the store keeps. Before, the store's INSTANCE_ID (4-16) and
// roles.ts's INSTANCE_ID (1-16) were two rules under one name: a node took ids no store keeps.
import { describe, expect, it } from 'vitest';
import { naming } from '../../../host/sandbox/docker/ownership.ts';
import { snapshotFolder } from '../../../host/sandbox/docker/workspaces/loop-snapshots.ts';
import * as roles from '../../../host/sandbox/nodes/remote/roles.ts';
import { checkInstanceId, INSTANCE_ID } from '../../../host/store/instance-id.ts';
import { makeControlCert } from '../../../scripts/node-certs.ts';

/** Whether each part that takes an instance id takes `id`. */
const takenBy = (id: string) => {
  const takes = (fn: () => unknown): boolean => {
    try {
      fn();
      return true;
    } catch {
      return false;
    }
  };
  return {
    store: takes(() => checkInstanceId(id)),
    node: roles.INSTANCE_ID.test(id),
    names: takes(() => naming('dsh', id)),
    snapshots: takes(() => snapshotFolder('/srv/ws', id)),
  };
};

describe('the instance id', () => {
  it('is one pattern: the store’s, re-exported for the sandbox', () => {
    expect(roles.INSTANCE_ID).toBe(INSTANCE_ID);
  });

  it('is taken by every part alike: what the store keeps, and nothing else', () => {
    const all = { store: true, node: true, names: true, snapshots: true };
    const none = { store: false, node: false, names: false, snapshots: false };
    for (const id of ['3f9c0a17b2e4', 'abcd', 'a'.repeat(16)]) expect(takenBy(id), id).toEqual(all);
    for (const id of ['a', 'abc', 'a'.repeat(17), 'ABCD1234', 'ab.cd', 'ab-cd', ''])
      expect(takenBy(id), id).toEqual(none);
  });

  it('refuses a certificate for an instance no store keeps, saying the rule (before anything is signed)', () => {
    expect(() => makeControlCert('/nonexistent', '/nonexistent', 'control', ['abc'])).toThrow(
      "a control plane's instances are 4-16 lowercase letters or digits, got abc",
    );
  });
});
