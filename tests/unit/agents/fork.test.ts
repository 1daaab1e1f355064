// Forks of isolated children (host/agents/service/fork.ts) over a fake provider: the child is made
// from the parent's snapshot on the node that holds it (snapshotNode), and the transient snapshot
// is deleted there whatever the create met; while that node is cordoned (NODE_CORDONED) the fork
// gives way to the tar copy (undefined), and any other failure is the caller's.
import { expect, it } from 'vitest';
import { forkedSandbox } from '../../../host/agents/service/fork.ts';
import { SandboxError } from '../../../host/errors.ts';
import type { Sandbox, SandboxProvider, SandboxSpec } from '../../../host/sandbox/types.ts';

const GIB = 1024 ** 3;

function provider(create: (spec: SandboxSpec) => Promise<Sandbox>) {
  const asked: string[] = [];
  const specs: SandboxSpec[] = [];
  const p = {
    snapshot: async (agentId: string, id: string) => {
      asked.push(`snapshot ${agentId}`);
      return { node: 'n2', sizeBytes: GIB, bytes: 4096, id };
    },
    dropSnapshot: async (id: string, node: string) => {
      asked.push(`drop ${id.startsWith('fork_') ? 'fork' : id} ${node}`);
    },
    create: async (spec: SandboxSpec) => {
      specs.push(spec);
      return create(spec);
    },
  } as unknown as SandboxProvider;
  return { p, asked, specs };
}

const spec: SandboxSpec = { tenantId: 't', agentId: 'child', near: 'parent' };

it('makes the child from the parent’s snapshot on the snapshot’s node, then deletes the snapshot there', async () => {
  const made = { id: 'c1' } as Sandbox;
  const { p, asked, specs } = provider(async () => made);
  expect(await forkedSandbox(p, spec, 'parent')).toBe(made);
  expect(specs[0]).toMatchObject({ snapshotNode: 'n2', near: 'parent', limits: { diskBytes: GIB } });
  expect(specs[0]?.fromSnapshot).toMatch(/^fork_/);
  expect(asked).toEqual(['snapshot parent', 'drop fork n2']);
});

it('gives way to the tar copy while the snapshot’s node is cordoned, and fails with anything else', async () => {
  const cordoned = provider(async () => {
    throw new SandboxError('NODE_CORDONED', 'cordoned', { data: { node: 'n2' } });
  });
  expect(await forkedSandbox(cordoned.p, spec, 'parent')).toBeUndefined();
  expect(cordoned.asked).toEqual(['snapshot parent', 'drop fork n2']);
  const silent = provider(async () => {
    throw new SandboxError('NODE_UNREACHABLE', 'silent', { data: { node: 'n2' } });
  });
  await expect(forkedSandbox(silent.p, spec, 'parent')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE' });
  expect(silent.asked).toEqual(['snapshot parent', 'drop fork n2']);
});
