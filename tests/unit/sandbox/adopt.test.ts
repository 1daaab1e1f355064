// adopt() with replicas: several processes share one instance, and a starting one removes only the
// pool containers of owners that no longer run (a fake engine: what was removed, what renamed).
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { adopt, adoptQuestions } from '../../../host/sandbox/docker/adopt.ts';
import type { NodeBase } from '../../../host/sandbox/docker/node-state.ts';
import { naming } from '../../../host/sandbox/docker/ownership.ts';
import type { WorkspaceStore } from '../../../host/sandbox/docker/workspaces.ts';

const INSTANCE = 'aaaa11112222';

const pooled = (id: string, owner: string) =>
  ({
    Id: id,
    Names: [`/dsh-${INSTANCE}-pool-${id}`],
    Labels: { 'dsh.managed': '1', 'dsh.instance': INSTANCE, 'dsh.pool': '1', 'dsh.pool.owner': owner },
    Mounts: [],
  }) as unknown as Docker.ContainerInfo;

/** A provider base over a fake engine listing `list`; records removals and renames. */
const engine = (list: Docker.ContainerInfo[], owner: string) => {
  const removed: string[] = [];
  const renamed: string[] = [];
  const errors: unknown[] = [];
  const docker = {
    listContainers: async () => list,
    getContainer: (id: string) => ({
      id,
      inspect: async () => ({ Id: id, Mounts: [] }),
      remove: async () => void removed.push(id),
      rename: async ({ name }: { name: string }) => void renamed.push(`${id}->${name}`),
    }),
  } as unknown as Docker;
  const workspaces = { sweep: async () => 0, owns: () => false } as unknown as WorkspaceStore;
  const base = {
    docker,
    prefix: 'dsh',
    instance: INSTANCE,
    names: naming('dsh', INSTANCE),
    owner,
    legacy: new Map(),
    adoptedNames: undefined,
    dormant: new Map(),
    workspaces,
    links: undefined,
    onError: (e: unknown) => void errors.push(e),
  } as unknown as NodeBase;
  return { base, removed, renamed, errors };
};

describe('adopt() with replicas sharing an instance', () => {
  it('keeps the pools of live replicas and removes those of dead ones, asking once per owner', async () => {
    const list = [
      pooled('mine', 'replica-b:1'),
      pooled('a1', 'replica-a:1'),
      pooled('a2', 'replica-a:1'),
      pooled('dead', 'replica-a:0'),
      pooled('assigned', 'replica-c:1'),
      pooled('assigned-dead', 'replica-a:0'),
    ];
    const { base, removed, renamed } = engine(list, 'replica-b:1');
    const asked: string[] = [];
    await adopt(base, {
      assigned: new Map([
        ['assigned', 'agent-c'],
        ['assigned-dead', 'agent-d'],
      ]),
      replicas: {
        alive: async (owner) => {
          asked.push(owner);
          return owner.endsWith(':1');
        },
      },
    });
    expect(asked.sort()).toEqual(['replica-a:0', 'replica-a:1', 'replica-c:1']);
    // A live replica's pool, even a container it is assigning now, is its own to finish.
    expect(removed).toEqual(['dead']);
    expect(renamed).toEqual([`assigned-dead->dsh-${INSTANCE}-agent-agent-d`]);
    // Another replica may make an agent's container later (one this replica takes over then).
    expect(base.adoptedNames).toBeUndefined();
  });

  it('keeps a pool whose owner cannot be asked (the database away), and says why', async () => {
    const { base, removed, errors } = engine([pooled('a1', 'replica-a:1')], 'replica-b:1');
    await adopt(base, {
      replicas: {
        alive: async () => {
          throw new Error('connection refused');
        },
      },
    });
    expect(removed).toEqual([]);
    expect(String(errors[0])).toMatch(/connection refused/);
  });

  it('without replicas, every other owner is a previous process: its pool goes', async () => {
    const { base, removed } = engine([pooled('old', 'nonce-old'), pooled('now', 'nonce-now')], 'nonce-now');
    await adopt(base);
    expect(removed).toEqual(['old']);
    expect(base.adoptedNames).toEqual(new Set());
  });
});

describe('adopt() on a store restored to an older point', () => {
  const agentContainer = (id: string, agentId: string, createdMs: number) =>
    ({
      Id: id,
      Names: [`/dsh-${INSTANCE}-agent-${agentId}`],
      Labels: { 'dsh.managed': '1', 'dsh.instance': INSTANCE, 'dsh.tenant': `t-${agentId}` },
      Mounts: [],
      Created: Math.floor(createdMs / 1000),
    }) as unknown as Docker.ContainerInfo;

  it("removes the containers of agents the store does not know and adopts the others'", async () => {
    const knownAt = Date.now();
    const { base, removed, errors } = engine(
      [
        agentContainer('c-kept', 'agt_kept', knownAt - 120_000),
        agentContainer('c-later', 'agt_later', knownAt - 120_000),
        agentContainer('c-new', 'agt_new', knownAt + 10_000),
      ],
      'proc-now',
    );
    const adopted = await adopt(base, { claim: [], known: ['agt_kept', 'agt_gone'], knownAt });
    expect(removed).toEqual(['c-later']);
    expect(adopted).toEqual([`dsh-${INSTANCE}-agent-agt_kept`, `dsh-${INSTANCE}-agent-agt_new`]);
    expect(String((errors[0] as Error).message)).toContain('its agent is not in the store');
    // Their tenants hold them until a lookup makes entries of them (the disk's share, provision.ts).
    expect(base.dormant).toEqual(
      new Map([
        [`dsh-${INSTANCE}-agent-agt_kept`, 't-agt_kept'],
        [`dsh-${INSTANCE}-agent-agt_new`, 't-agt_new'],
      ]),
    );
  });

  it('asks only about its own containers, and reclaims only those the answer names (the node protocol)', async () => {
    const knownAt = Date.now();
    const list = [
      agentContainer('c-kept', 'agt_kept', knownAt - 120_000),
      agentContainer('c-later', 'agt_later', knownAt - 120_000),
      agentContainer('c-new', 'agt_new', knownAt + 10_000),
      pooled('p-left', 'proc-gone'),
      pooled('p-mine', 'proc-now'),
      {
        Id: 'c-legacy',
        Names: ['/dsh-agent-agt_old'],
        Labels: { 'dsh.managed': '1' },
        Mounts: [],
      } as unknown as Docker.ContainerInfo,
      {
        ...agentContainer('c-other', 'agt_other', 0),
        Labels: { 'dsh.managed': '1', 'dsh.instance': 'other' },
      },
    ];
    const { base, removed } = engine(list, 'proc-now');
    // What the control plane is asked: not the young container's agent, not its own pool, not another instance's.
    expect(await adoptQuestions(base, knownAt)).toEqual({
      sandboxes: ['p-left', 'c-legacy'],
      agents: ['agt_kept', 'agt_later'],
    });
    const adopted = await adopt(base, { claim: [], unknown: ['agt_later', 'agt_new'], knownAt });
    expect(removed).toEqual(['c-later', 'p-left']);
    expect(adopted).toEqual([`dsh-${INSTANCE}-agent-agt_kept`, `dsh-${INSTANCE}-agent-agt_new`]);
  });
});
