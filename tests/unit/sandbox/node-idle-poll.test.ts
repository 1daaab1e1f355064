// Idle polling on a node agent (host/sandbox/nodes/remote/server.ts, host/idle-poll.ts): the node
// server in front of a fake node, the control plane's remote node against it. A relayed call, and
// every chunk spliced either way on a channel or a link (a call, its answer, output the sandbox
// sends unasked), keep its idle CPUs polling; the control plane's own rounds (its `info`, the health
// probe's `capacity`) do not, and an open stream with nothing flowing lets them halt. `capacity`
// says the state, and the control plane shows it (saneCapacity keeps only a known state). With the
// real device (root), the kernel's target is 0 µs while a relayed call's polling is held.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdlePoll, type IdlePoll, NO_CONSTRAINT_US } from '../../../host/idle-poll.ts';
import { saneCapacity } from '../../../host/sandbox/nodes/placement.ts';
import { connectRemoteNode, type RemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import { type NodeServer, serveNode } from '../../../host/sandbox/nodes/remote/server.ts';
import type { SandboxdChannel, SandboxdPipe } from '../../../host/sandbox/nodes/types.ts';
import { makeCa, makeCert, makeControlCert } from '../../../scripts/node-certs.ts';
import { currentTarget, recordingDevice } from '../../helpers/cpu-latency.ts';
import { fakeCapacity, fakeNode, openKnown, readSome } from '../../helpers/fake-node.ts';
import { servingAs, tlsOf } from '../../helpers/node-tls.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-node-idle-poll-'));
const ca = join(dir, 'ca');

/** Agent `talker`'s sandboxd: what the test writes to `say` comes out unasked (output, no input). */
const say = new PassThrough();
const talker = (): SandboxdChannel => {
  const heard = new PassThrough().resume();
  let close = (): void => {};
  const closed = new Promise<void>((resolve) => {
    close = resolve;
  });
  return { input: say, output: heard, closed, close: () => close() };
};

const started: Array<{ server: NodeServer; node: RemoteNode; poll: IdlePoll }> = [];

/** A node server holding `poll`, and the control plane's node over it. */
const serveWith = async (poll: IdlePoll): Promise<RemoteNode> => {
  const served = {
    ...fakeNode('one'),
    open: (agentId: string) => (agentId === 'talker' ? Promise.resolve(talker()) : openKnown(agentId)),
  };
  const server = await serveNode({ ...servingAs(ca), nodeFor: () => served, idlePoll: poll });
  const node = await connectRemoteNode({
    name: 'one',
    url: `https://127.0.0.1:${server.port}`,
    instance: 'test',
    ...tlsOf(ca, 'control'),
    timeoutMs: 5000,
  });
  started.push({ server, node, poll });
  return node;
};

beforeAll(() => {
  makeCa(ca);
  makeCert(ca, ca, 'one', ['127.0.0.1']);
  makeControlCert(ca, ca, 'control', ['test']);
});

afterAll(async () => {
  for (const { server, node, poll } of started) {
    await node.close();
    await server.close();
    poll.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Once nothing relayed for the linger: the request lifted (at once when it is not held). */
const quiet = async (poll: IdlePoll, device: ReturnType<typeof recordingDevice>): Promise<void> => {
  while (poll.state === 'polling') await device.written(NO_CONSTRAINT_US);
};

describe('idle polling on a node agent', () => {
  it('relayed calls hold it; the control plane rounds do not, and capacity says the state', async () => {
    const device = recordingDevice();
    const poll = createIdlePoll({ enabled: true, lingerMs: 5, open: device.open });
    const node = await serveWith(poll);
    // The connection's `info` and the health probe's `capacity` are not activity.
    expect((await node.capacity()).idlePoll).toBe('idle');
    expect(device.writes).toEqual([]);

    expect(await node.find('nobody')).toBeUndefined();
    expect(device.writes[0]).toBe(0);
    await device.written(NO_CONSTRAINT_US, 0); // the linger passed with nothing relayed
    expect((await node.capacity()).idlePoll).toBe('idle');

    // Another call asks for polling again.
    const mark = device.writes.length;
    expect(await node.state('nobody')).toBe('running');
    await device.written(0, mark);
  });

  it('bytes either way on a channel and a link hold it; an open stream with nothing flowing does not', async () => {
    const device = recordingDevice();
    const poll = createIdlePoll({ enabled: true, lingerMs: 5, open: device.open });
    const node = await serveWith(poll);

    // Output the sandbox sends with no call from the control plane (a terminal's, a job's).
    const talking = await node.open('talker');
    await quiet(poll, device); // the open touched it; then nothing flows
    let mark = device.writes.length;
    say.write('output nobody asked for');
    expect(await readSome(talking, 23)).toBe('output nobody asked for');
    await device.written(0, mark);
    await device.written(NO_CONSTRAINT_US, mark);
    expect(poll.state).toBe('idle'); // the channel is still open
    talking.close();

    // A call and its answer over the link (the echo stands in for sandboxd).
    const channel = await node.open('known');
    const link = (await (await channel.link?.())?.accepted) as SandboxdPipe;
    await quiet(poll, device);
    mark = device.writes.length;
    link.output.write('a call');
    expect(await readSome(link, 6)).toBe('a call');
    await device.written(0, mark);
    link.close();
    channel.close();
    await channel.closed;
  });

  it('the control plane keeps a node state only when it is one it knows', () => {
    const capacity = fakeCapacity('one');
    expect(saneCapacity({ ...capacity, idlePoll: 'polling' })?.idlePoll).toBe('polling');
    const forged = { ...capacity, idlePoll: '<script>' } as unknown as typeof capacity;
    expect(saneCapacity(forged)).not.toHaveProperty('idlePoll');
    expect(saneCapacity(capacity)).not.toHaveProperty('idlePoll');
  });

  const writable = currentTarget() !== undefined && process.getuid?.() === 0;
  it.skipIf(!writable)('the real device: the kernel targets 0 µs while a relayed call is held', async () => {
    const poll = createIdlePoll({ enabled: true, lingerMs: 60_000 });
    const node = await serveWith(poll);
    expect((await node.capacity()).idlePoll).toBe('idle');
    await node.find('nobody');
    expect(poll.state).toBe('polling');
    expect(currentTarget()).toBe(0);
    expect((await node.capacity()).idlePoll).toBe('polling');
  });
});
