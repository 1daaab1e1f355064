// A node without an engine, for the node protocol's tests (tests/unit/sandbox/node-*.test.ts) that
// put the node server in front of one: every required call of SandboxNode answers as an empty
// node would, and agent `known` alone has a sandbox to open (an echo with a link). A test spreads
// it and overrides the calls it watches or changes: `{ ...fakeNode('one'), ensure: … }`.
// The optional calls (snapshots, adopt questions, pooled channels) are left out, so the node stands
// for one that keeps none of them (an older node agent) unless the test adds them.
import { SandboxError } from '../../host/errors.ts';
import { DOCKER_DEFAULT_LIMITS, DOCKER_DEFAULT_MAXIMA } from '../../host/sandbox/docker/config.ts';
import type {
  NodeCapacity,
  SandboxdChannel,
  SandboxdPipe,
  SandboxNode,
} from '../../host/sandbox/nodes/types.ts';
import { echoPipe as echo } from './echo-pipe.ts';

/**
 * Agent `known`'s channel: an echo whose link is accepted at once with another echo (`onLink`
 * sees each link offered); any other agent has no sandbox here (SANDBOX_UNAVAILABLE).
 */
export const openKnown = async (agentId: string, onLink = (): void => {}): Promise<SandboxdChannel> => {
  if (agentId !== 'known') throw new SandboxError('SANDBOX_UNAVAILABLE', `no sandbox for ${agentId}`);
  return {
    ...echo(),
    link: async () => {
      onLink();
      return { token: 'a'.repeat(64), accepted: Promise.resolve(echo()), close: () => {} };
    },
  };
};

/** An empty node's capacity: two CPUs, nothing placed, no pool, runc alone; `changes` on top. */
export const fakeCapacity = (node: string, changes: Partial<NodeCapacity> = {}): NodeCapacity => ({
  node,
  cpus: 2,
  memoryBytes: 1,
  sandboxes: 0,
  running: 0,
  pool: { ready: 0, size: 0 },
  runtimes: ['runc'],
  ...changes,
});

/** Node `name` with the docker defaults and maxima, no pool, no sandbox but agent `known`'s. */
export const fakeNode = (name: string): SandboxNode<unknown> => ({
  name,
  defaults: DOCKER_DEFAULT_LIMITS,
  maxima: DOCKER_DEFAULT_MAXIMA,
  pool: { ready: 0, filled: async () => {} },
  ensure: async (spec) => ({ id: `c-${spec.agentId}`, limits: spec.limits }),
  find: async () => undefined,
  open: (agentId) => openKnown(agentId),
  state: async () => 'running',
  stop: async () => {},
  pause: async () => 'none',
  destroy: async () => {},
  usage: async () => undefined,
  adopt: async () => [],
  capacity: async () => fakeCapacity(name),
  close: async () => {},
});

/** What `pipe` carries until at least `bytes` characters arrived. */
export const readSome = (pipe: SandboxdPipe, bytes: number): Promise<string> =>
  new Promise((resolve) => {
    let got = '';
    const on = (c: Buffer): void => {
      got += c.toString();
      if (got.length >= bytes) {
        pipe.input.off('data', on);
        resolve(got);
      }
    };
    pipe.input.on('data', on);
  });
