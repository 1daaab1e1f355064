// The node protocol (host/sandbox/nodes/remote/) without an engine: the server in front of a fake
// node, the control plane's remote node against it. Calls and errors keep their meaning across the
// wire, the two streams carry bytes both ways, and what a hostile or mistaken client sends is
// refused before the node is asked: no certificate or another CA's, a bad instance, an agent id
// that is too long, limits over the node's maxima, a pause mode or a runtime it does not know, a
// body over 1 MiB, an unknown call. The runtime of a spec and those a node offers cross too. A
// node that is down fails calls with NODE_UNREACHABLE naming it, and one that did not answer at
// the control plane's start (lateRemoteNode) is connected once it does.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { DOCKER_DEFAULT_LIMITS, DOCKER_DEFAULT_MAXIMA } from '../../../host/sandbox/docker/config.ts';
import { connectRemoteNode, type RemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import { lateRemoteNode } from '../../../host/sandbox/nodes/remote/late.ts';
import { type NodeServer, serveNode } from '../../../host/sandbox/nodes/remote/server.ts';
import type { AdoptAsking, SandboxdPipe, SandboxNode } from '../../../host/sandbox/nodes/types.ts';
import { makeCa, makeCert, makeControlCert, signCert } from '../../../scripts/node-certs.ts';
import { fakeCapacity, fakeNode, readSome } from '../../helpers/fake-node.ts';
import { servingAs, tlsOf } from '../../helpers/node-tls.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-node-protocol-'));
const pem = (...p: string[]): string => readFileSync(join(dir, ...p), 'utf8');
const ca = join(dir, 'ca');

const asked: string[] = [];
/** The knownAt each of the fake's adopt steps was given. */
const adoptedAt: Array<number | undefined> = [];
const fake: SandboxNode<unknown> & AdoptAsking = {
  ...fakeNode('fake'),
  ensure: async (spec) => {
    asked.push(
      `ensure ${spec.agentId}${spec.runtime === undefined ? '' : ` ${spec.runtime}`}${spec.fromSnapshot === undefined ? '' : ` from ${spec.fromSnapshot}`}`,
    );
    return { id: `c-${spec.agentId}`, limits: spec.limits };
  },
  find: async (agentId) =>
    agentId === 'known' ? { id: 'c-known', limits: DOCKER_DEFAULT_LIMITS } : undefined,
  pause: async (agentId, mode) => {
    asked.push(`pause ${agentId} ${mode}`);
    return agentId === 'known' ? mode : 'none';
  },
  destroy: async (agentId) => {
    asked.push(`destroy ${agentId}`);
  },
  snapshot: async (agentId, id) => {
    asked.push(`snapshot ${agentId} ${id}`);
    if (agentId !== 'known') throw new SandboxError('SANDBOX_UNAVAILABLE', `no sandbox for ${agentId}`);
    return { sizeBytes: 2 ** 40, bytes: 4096 };
  },
  dropSnapshot: async (id) => {
    asked.push(`drop ${id}`);
  },
  adopt: async (o) => {
    adoptedAt.push(o?.knownAt);
    return [...(o?.claim ?? []), ...[...(o?.unknown ?? [])].map((slug) => `unknown:${slug}`)];
  },
  adoptQuestions: async (knownAt) => {
    adoptedAt.push(knownAt);
    return { sandboxes: ['x', 'y', 'z'], agents: ['k1', 'gone'] };
  },
  capacity: async () => fakeCapacity('fake', { runtimes: ['runc', 'gvisor'] }),
};

let server: NodeServer;
const refusals: string[] = [];
let node: RemoteNode;

beforeAll(async () => {
  makeCa(ca);
  makeCert(ca, ca, 'one', ['127.0.0.1']);
  makeCert(ca, ca, 'late', ['127.0.0.1']);
  makeControlCert(ca, ca, 'control', ['test']);
  makeCa(join(dir, 'rogue'));
  makeControlCert(join(dir, 'rogue'), join(dir, 'rogue'), 'control', ['test']);
  server = await serveNode({
    ...servingAs(ca),
    nodeFor: () => fake,
    onRefused: (from, reason) => refusals.push(`${from} ${reason}`),
  });
  node = await connectRemoteNode({
    name: 'one',
    url: `https://127.0.0.1:${server.port}`,
    instance: 'test',
    ...tlsOf(ca, 'control'),
    timeoutMs: 5000,
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One raw call: status and body, or the connection's error code. */
const raw = (
  path: string,
  body: string,
  options: { instance?: string; client?: 'ca' | 'rogue' | 'none'; cert?: string } = {},
): Promise<{ status: number; body: string } | string> =>
  new Promise((resolve) => {
    const client = options.client ?? 'ca';
    const req = request({
      host: '127.0.0.1',
      port: server.port,
      path,
      method: 'POST',
      ca: pem('ca', 'ca.pem'),
      ...(client === 'none'
        ? {}
        : {
            cert: pem(client, `${options.cert ?? 'control'}.pem`),
            key: pem(client, `${options.cert ?? 'control'}.key`),
          }),
      agent: false,
      headers: { 'x-dsh-instance': options.instance ?? 'test' },
    });
    req.once('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    req.end(body);
  });

describe('the node protocol', () => {
  it('carries calls and their errors, with their codes', async () => {
    expect(node.defaults).toEqual(DOCKER_DEFAULT_LIMITS);
    expect(await node.ensure({ agentId: 'a1', tenantId: 't1', limits: DOCKER_DEFAULT_LIMITS })).toEqual({
      id: 'c-a1',
      limits: DOCKER_DEFAULT_LIMITS,
    });
    expect(await node.find('known')).toEqual({ id: 'c-known', limits: DOCKER_DEFAULT_LIMITS });
    expect(await node.find('other')).toBeUndefined();
    expect(await node.state('known')).toBe('running');
    expect(await node.adopt({ claim: ['x', 'y'] })).toEqual(['x', 'y']);
    // In two steps: the node's questions, then the answers about them (docs/nodes.md "Adoption").
    expect(await node.adopt({ claim: ['y', 'w'], known: ['k1', 'k2'], knownAt: 5 })).toEqual([
      'y',
      'unknown:gone',
    ]);
    expect(adoptedAt).toEqual([undefined, undefined, 5, 5]);
    expect(
      await node.ensure({ agentId: 'g1', tenantId: 't1', limits: DOCKER_DEFAULT_LIMITS, runtime: 'gvisor' }),
    ).toMatchObject({ id: 'c-g1' });
    expect((await node.capacity()).runtimes).toEqual(['runc', 'gvisor']);
    expect(await node.pause('known', 'freeze')).toBe('freeze');
    expect(await node.pause('other', 'stop')).toBe('none');
    await node.destroy('a1');
    expect(asked).toEqual([
      'ensure a1',
      'ensure g1 gvisor',
      'pause known freeze',
      'pause other stop',
      'destroy a1',
    ]);
    await expect(node.open('other')).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
  });

  it('carries snapshots: taken, made from, dropped, and their errors', async () => {
    asked.length = 0;
    expect(await node.snapshot?.('known', 'snap_1')).toEqual({ sizeBytes: 2 ** 40, bytes: 4096 });
    await expect(node.snapshot?.('other', 'snap_2')).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    await node.ensure({
      agentId: 'f1',
      tenantId: 't1',
      limits: DOCKER_DEFAULT_LIMITS,
      fromSnapshot: 'snap_1',
    });
    await node.dropSnapshot?.('snap_1');
    expect(asked).toEqual([
      'snapshot known snap_1',
      'snapshot other snap_2',
      'ensure f1 from snap_1',
      'drop snap_1',
    ]);
  });

  it('carries bytes both ways on the channel and on the link', async () => {
    const channel = await node.open('known');
    channel.output.write('hello over the channel');
    expect(await readSome(channel, 22)).toBe('hello over the channel');
    const offer = await channel.link?.();
    expect(offer?.token).toBe('a'.repeat(64));
    const link = (await offer?.accepted) as SandboxdPipe;
    link.output.write('and over the link');
    expect(await readSome(link, 17)).toBe('and over the link');
    link.close();
    channel.close();
    await channel.closed;
  });

  it('refuses a connection without a certificate of the cluster CA', async () => {
    expect(await raw('/v1/info', '{}', { client: 'none' })).toEqual(expect.any(String));
    expect(await raw('/v1/info', '{}', { client: 'rogue' })).toEqual(expect.any(String));
    expect(await raw('/v1/info', '{}')).toMatchObject({ status: 200 });
  });

  it('refuses what a hostile client sends before the node is asked', async () => {
    asked.length = 0;
    const code = (r: { status: number; body: string } | string): string =>
      typeof r === 'string' ? r : (JSON.parse(r.body) as { error: { code: string } }).error.code;
    expect(code(await raw('/v1/info', '{}', { instance: 'Not-An-Instance' }))).toBe('INVALID_ARGUMENTS');
    expect(code(await raw('/v1/find', JSON.stringify({ agentId: 'x'.repeat(201) })))).toBe(
      'INVALID_ARGUMENTS',
    );
    expect(code(await raw('/v1/find', JSON.stringify({ agentId: 'with space' })))).toBe('INVALID_ARGUMENTS');
    const over = { ...DOCKER_DEFAULT_LIMITS, memoryBytes: DOCKER_DEFAULT_MAXIMA.memoryBytes * 2 };
    expect(code(await raw('/v1/ensure', JSON.stringify({ agentId: 'a', tenantId: 't', limits: over })))).toBe(
      'LIMIT_EXCEEDED',
    );
    expect(
      code(await raw('/v1/ensure', JSON.stringify({ agentId: 'a', tenantId: 't', limits: { pids: -1 } }))),
    ).toBe('LIMIT_EXCEEDED');
    expect(code(await raw('/v1/find', 'x'.repeat(2 * 1024 * 1024)))).toMatch(
      /INVALID_ARGUMENTS|EPIPE|ECONNRESET/,
    );
    expect(code(await raw('/v1/find', 'not json'))).toBe('INVALID_ARGUMENTS');
    for (const mode of ['kill', '', null, 1, ['stop'], 'STOP'])
      expect(code(await raw('/v1/pause', JSON.stringify({ agentId: 'known', mode })))).toBe(
        'INVALID_ARGUMENTS',
      );
    expect(code(await raw('/v1/pause', JSON.stringify({ mode: 'stop' })))).toBe('INVALID_ARGUMENTS');
    for (const runtime of ['runsc', 'kata', '', null, ['gvisor'], 'GVISOR'])
      expect(
        code(
          await raw(
            '/v1/ensure',
            JSON.stringify({ agentId: 'a', tenantId: 't', limits: DOCKER_DEFAULT_LIMITS, runtime }),
          ),
        ),
      ).toBe('INVALID_ARGUMENTS');
    expect(code(await raw('/v1/pause', JSON.stringify({ agentId: 'a\nb', mode: 'stop' })))).toBe(
      'INVALID_ARGUMENTS',
    );
    for (const id of ['../x', '.snapshots', '', 'a/b', 'x'.repeat(200), 7, null]) {
      expect(code(await raw('/v1/snapshot', JSON.stringify({ agentId: 'known', id })))).toBe(
        'INVALID_ARGUMENTS',
      );
      expect(code(await raw('/v1/dropSnapshot', JSON.stringify({ id })))).toBe('INVALID_ARGUMENTS');
      expect(
        code(
          await raw(
            '/v1/ensure',
            JSON.stringify({ agentId: 'a', tenantId: 't', limits: DOCKER_DEFAULT_LIMITS, fromSnapshot: id }),
          ),
        ),
      ).toBe('INVALID_ARGUMENTS');
    }
    expect(code(await raw('/v1/exec', '{}'))).toBe('NOT_FOUND');
    expect(asked).toEqual([]);
  });
});

it('fails calls on a node that is down with NODE_UNREACHABLE naming it, and connects a late node once it answers', async () => {
  const serve = (port: number) =>
    serveNode({
      ...servingAs(ca, 'late', port),
      nodeFor: () => fake,
    });
  const first = await serve(0);
  const port = first.port;
  await first.close();
  const options = {
    name: 'late',
    url: `https://127.0.0.1:${port}`,
    instance: 'test',
    ...tlsOf(ca, 'control'),
    timeoutMs: 5000,
  };
  await expect(connectRemoteNode(options)).rejects.toMatchObject({
    code: 'NODE_UNREACHABLE',
    data: { node: 'late' },
  });
  const like = { defaults: { ...DOCKER_DEFAULT_LIMITS, pids: 7 }, maxima: DOCKER_DEFAULT_MAXIMA };
  const late = lateRemoteNode(options, like);
  expect(late.defaults.pids).toBe(7);
  await expect(late.capacity()).rejects.toMatchObject({ code: 'NODE_UNREACHABLE', message: /Node late/ });
  const back = await serve(port);
  try {
    expect((await late.capacity()).cpus).toBe(2);
    expect(late.defaults).toEqual(DOCKER_DEFAULT_LIMITS);
    // Its snapshots too, once connected (placement takes a node without these for one that keeps none).
    asked.length = 0;
    expect(await late.snapshot?.('known', 'snap_late')).toEqual({ sizeBytes: 2 ** 40, bytes: 4096 });
    await late.dropSnapshot?.('snap_late');
    expect(asked).toEqual(['snapshot known snap_late', 'drop snap_late']);
  } finally {
    await back.close();
  }
});

describe('certificate roles', () => {
  const client = 'extendedKeyUsage=clientAuth,serverAuth\nkeyUsage=digitalSignature\n';
  beforeAll(() => {
    // Signed by the cluster's CA and fit for a client, but not a control plane's.
    signCert(ca, ca, 'as-node', `${client}subjectAltName=URI:urn:dsh:node:one,IP:127.0.0.1\n`);
    signCert(ca, ca, 'no-role', `${client}subjectAltName=IP:127.0.0.1\n`);
    signCert(ca, ca, 'both', `${client}subjectAltName=URI:urn:dsh:control-plane,URI:urn:dsh:node:one\n`);
  });
  const codeOf = (r: { status: number; body: string } | string): string =>
    typeof r === 'string' ? r : (JSON.parse(r.body) as { error: { code: string } }).error.code;
  /** An `open` upgrade with certificate `cert`: the status of the answer, or the connection's error. */
  const upgradeAs = (cert: string): Promise<number | string> =>
    new Promise((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port: server.port,
        path: '/v1/open?agent=known',
        ...tlsOf(ca, cert),
        agent: false,
        headers: { 'x-dsh-instance': 'test', connection: 'Upgrade', upgrade: 'dsh-node/1' },
      });
      req.once('upgrade', (_res, socket) => {
        socket.destroy();
        resolve(101);
      });
      req.once('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      req.end();
    });

  it("refuses a node's certificate, or one with no role or two, as a client, with a stable code and a report", async () => {
    asked.length = 0;
    refusals.length = 0;
    // The node certificate scripts/node-certs.ts makes is not even fit for a client: the handshake fails.
    expect(await raw('/v1/info', '{}', { cert: 'one' })).toEqual(expect.any(String));
    for (const cert of ['as-node', 'no-role', 'both']) {
      const r = await raw('/v1/ensure', JSON.stringify({ agentId: 'x', tenantId: 't', limits: {} }), {
        cert,
      });
      expect(r).toMatchObject({ status: 502 });
      expect(codeOf(r)).toBe('NODE_CERTIFICATE_REFUSED');
      expect(await upgradeAs(cert)).toBe(502);
    }
    expect(asked).toEqual([]);
    // One report per connection: the handshake's, then each certificate's twice (a call, an upgrade).
    expect(refusals).toHaveLength(7);
    expect(refusals[0]).toMatch(/in the TLS handshake: /);
    for (const line of refusals.slice(1)) expect(line).toMatch(/^127\.0\.0\.1:\d+ \S/);
    expect(refusals[1]).toMatch(/Only a control plane's certificate .* CN=as-node, role urn:dsh:node:one/);
    expect(refusals[3]).toMatch(/CN=no-role, role none/);
    expect(refusals[5]).toMatch(/CN=both, role urn:dsh:control-plane and urn:dsh:node:one/);
    // A control plane's certificate is served, on the same server.
    expect(await raw('/v1/info', '{}')).toMatchObject({ status: 200 });
    expect(await upgradeAs('control')).toBe(101);
  });

  it("refuses a node whose certificate is another node's, at the address the control plane dialled", async () => {
    let served = 0;
    // Node one's certificate (CA-signed, naming 127.0.0.1) presented where node two is expected.
    const impostor = await serveNode({
      ...servingAs(ca),
      nodeFor: () => {
        served += 1;
        return fake;
      },
    });
    try {
      const options = {
        url: `https://127.0.0.1:${impostor.port}`,
        instance: 'test',
        ...tlsOf(ca, 'control'),
        timeoutMs: 5000,
      };
      await expect(connectRemoteNode({ ...options, name: 'two' })).rejects.toMatchObject({
        code: 'NODE_CERTIFICATE_REFUSED',
        data: { node: 'two' },
        message: /Node two presented a certificate that is not node two's .*CN=one/,
      });
      expect(served).toBe(0); // nothing was sent
      // The same server is node one, and is served as such.
      const one = await connectRemoteNode({ ...options, name: 'one' });
      expect((await one.capacity()).cpus).toBe(2);
    } finally {
      await impostor.close();
    }
  });
});

it('closes its open channels and links when the server closes, promptly', async () => {
  const closing = await serveNode({
    ...servingAs(ca),
    nodeFor: () => fake,
  });
  const remote = await connectRemoteNode({
    name: 'one',
    url: `https://127.0.0.1:${closing.port}`,
    instance: 'test',
    ...tlsOf(ca, 'control'),
    timeoutMs: 5000,
  });
  const channel = await remote.open('known');
  const link = (await (await channel.link?.())?.accepted) as SandboxdPipe;
  link.output.write('ping');
  expect(await readSome(link, 4)).toBe('ping');
  await closing.close();
  await Promise.all([channel.closed, link.closed]);
});
