// A control plane acts on a node only for the instances its certificate names
// (host/sandbox/nodes/remote/roles.ts, `urn:dsh-instance:<id>`), through the real server over TLS
// on loopback: another control plane's certificate of the same CA, and one made before instances
// were named, are refused for every call and both upgrades (`open`, its pooled form, and `link`),
// with NODE_CERTIFICATE_REFUSED saying what the certificate must carry, before the body is read
// and before the instance's node is made or asked; each refusal is reported once per connection
// and instance. The certificate's own instance is served (calls, open, link), one naming two
// instances serves both, and a control plane whose own certificate does not name its instance
// stops before it sends a byte, saying which instance to name.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, request } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { DOCKER_DEFAULT_LIMITS } from '../../../host/sandbox/docker/config.ts';
import { connectRemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import { METHODS } from '../../../host/sandbox/nodes/remote/protocol.ts';
import { type NodeServer, serveNode } from '../../../host/sandbox/nodes/remote/server.ts';
import type { PooledChannels, SandboxdPipe, SandboxNode } from '../../../host/sandbox/nodes/types.ts';
import { makeCa, makeCert, makeControlCert, signCert } from '../../../scripts/node-certs.ts';
import { echoPipe as echo } from '../../helpers/echo-pipe.ts';
import { fakeCapacity, fakeNode, openKnown } from '../../helpers/fake-node.ts';
import { servingAs, tlsOf } from '../../helpers/node-tls.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-node-instance-'));
const ca = join(dir, 'ca');
const pem = (name: string): string => readFileSync(join(ca, name), 'utf8');

/** What was done on the node: `<instance> <method>`, and the instances a node was made for. */
const asked: string[] = [];
const made: string[] = [];
const forbidden: string[] = [];

/** Instance `instance`'s node: every call recorded; agent `known` has a sandbox with a link. */
const fakeFor = (instance: string): SandboxNode<unknown> & PooledChannels => {
  const did = (what: string): void => {
    asked.push(`${instance} ${what}`);
  };
  const base = fakeNode('one');
  return {
    ...base,
    pool: { ready: 0, filled: async () => did('filled') },
    ensure: async (spec) => {
      did(`ensure ${spec.agentId}`);
      return base.ensure(spec);
    },
    find: async (agentId) => {
      did(`find ${agentId}`);
      return undefined;
    },
    open: async (agentId) => {
      did(`open ${agentId}`);
      return openKnown(agentId, () => did('link'));
    },
    state: async () => {
      did('state');
      return 'running';
    },
    stop: async () => did('stop'),
    pause: async () => {
      did('pause');
      return 'none';
    },
    destroy: async () => did('destroy'),
    snapshot: async () => {
      did('snapshot');
      return { sizeBytes: 1, bytes: 1 };
    },
    dropSnapshot: async () => did('dropSnapshot'),
    usage: async () => {
      did('usage');
      return undefined;
    },
    adopt: async () => {
      did('adopt');
      return [];
    },
    capacity: async () => {
      did('capacity');
      return fakeCapacity('one', { pool: { ready: 1, size: 1 } });
    },
    unclaimed: () => {
      did('unclaimed');
      return ['ab12'];
    },
    claim: (id) => {
      did(`claim ${id}`);
      return { channel: echo(), claim: 'c'.repeat(32) };
    },
    poolFor: () => ({ ready: 1, size: 1 }),
  };
};

let server: NodeServer;
const nodes = new Map<string, SandboxNode<unknown> & PooledChannels>();

beforeAll(async () => {
  makeCa(ca);
  makeCert(ca, ca, 'one', ['127.0.0.1']);
  makeControlCert(ca, ca, 'alpha', ['alpha']);
  makeControlCert(ca, ca, 'beta', ['beta']);
  makeControlCert(ca, ca, 'both', ['alpha', 'beta']);
  // A control plane's certificate as made before instances were named: the role only.
  signCert(
    ca,
    ca,
    'bare',
    'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\nsubjectAltName=URI:urn:dsh:control-plane\n',
  );
  server = await serveNode({
    ...servingAs(ca),
    nodeFor: (instance) => {
      let node = nodes.get(instance);
      if (node === undefined) {
        made.push(instance);
        node = fakeFor(instance);
        nodes.set(instance, node);
      }
      return node;
    },
    onForbidden: (from, instance, reason) => forbidden.push(`${from} ${instance} ${reason}`),
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  asked.length = 0;
  forbidden.length = 0;
});

/** One call with certificate `cert` for `instance`: its status and error code (each on a connection of its own unless `agent`). */
const call = (
  cert: string,
  instance: string,
  method: string,
  body = '{}',
  agent: Agent | false = false,
): Promise<{ status: number; code?: string; message?: string }> =>
  new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: server.port,
      path: `/v1/${method}`,
      method: 'POST',
      ...tlsOf(ca, cert),
      agent,
      headers: { 'x-dsh-instance': instance, 'content-type': 'application/json' },
    });
    req.once('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.once('end', () => {
        const error = (JSON.parse(text || '{}') as { error?: { code: string; message: string } }).error;
        resolve({ status: res.statusCode ?? 0, ...(error === undefined ? {} : error) });
      });
    });
    req.once('error', reject);
    req.end(body);
  });

/** One upgrade with certificate `cert` for `instance`: 101 with its headers and socket, or the refusal's status. */
const upgrade = (
  cert: string,
  instance: string,
  path: string,
): Promise<{ status: number; headers?: IncomingHttpHeaders; socket?: Socket }> =>
  new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: server.port,
      path,
      ...tlsOf(ca, cert),
      agent: false,
      headers: { 'x-dsh-instance': instance, connection: 'Upgrade', upgrade: 'dsh-node/1' },
    });
    req.once('upgrade', (res, socket) => resolve({ status: 101, headers: res.headers, socket }));
    req.once('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    req.once('error', reject);
    req.end();
  });

/** A body each call would take (so that only the certificate can refuse it). */
const bodies: Record<string, unknown> = {
  ensure: { agentId: 'x', tenantId: 't', limits: {} },
  find: { agentId: 'x' },
  state: { agentId: 'x' },
  stop: { agentId: 'x' },
  destroy: { agentId: 'x' },
  usage: { agentId: 'x' },
  pause: { agentId: 'x', mode: 'stop' },
  snapshot: { agentId: 'x', id: 's1' },
  dropSnapshot: { id: 's1' },
};

it('refuses every call and both upgrades for an instance the certificate does not name, doing nothing on the node', async () => {
  // Instance alpha's own control plane opens a channel: its id is what a link would name.
  const opened = await upgrade('alpha', 'alpha', '/v1/open?agent=known');
  expect(opened.status).toBe(101);
  const channel = String(opened.headers?.['x-dsh-channel']);
  asked.length = 0;

  for (const cert of ['beta', 'bare']) {
    for (const method of METHODS) {
      const r = await call(cert, 'alpha', method, JSON.stringify(bodies[method] ?? {}));
      expect(r, `${cert} ${method}`).toMatchObject({ status: 502, code: 'NODE_CERTIFICATE_REFUSED' });
      // The error says what the certificate must carry, and how to make one that does.
      expect(r.message).toMatch(
        /urn:dsh-instance:<id>.* not instance alpha\. .*node-certs\.ts control .* alpha/,
      );
    }
    expect((await call(cert, 'alpha', 'info')).message).toMatch(
      cert === 'bare' ? /this one names none/ : /this one names beta,/,
    );
    expect((await upgrade(cert, 'alpha', '/v1/open?agent=known')).status).toBe(502);
    expect((await upgrade(cert, 'alpha', '/v1/open?pooled=ab12')).status).toBe(502);
    expect((await upgrade(cert, 'alpha', `/v1/link?channel=${channel}`)).status).toBe(502);
  }
  // A body over the limit is not even read: the certificate is refused first.
  expect(await call('beta', 'alpha', 'ensure', 'x'.repeat(2 * 1024 * 1024))).toMatchObject({
    status: 502,
    code: 'NODE_CERTIFICATE_REFUSED',
  });
  // Nothing was done on alpha's node, and no node was made for an instance no certificate names.
  expect(await call('beta', 'gamma', 'info')).toMatchObject({ status: 502 });
  expect(asked).toEqual([]);
  expect(made).not.toContain('gamma');

  // The channel and its link are alpha's: its own certificate links it.
  const linked = await upgrade('alpha', 'alpha', `/v1/link?channel=${channel}`);
  expect(linked.status).toBe(101);
  expect(asked).toEqual(['alpha link']);
  linked.socket?.destroy();
  opened.socket?.destroy();
});

it('serves the instance the certificate names (calls, open, link), and each of two it names', async () => {
  const remote = (cert: string, instance: string) =>
    connectRemoteNode({
      name: 'one',
      url: `https://127.0.0.1:${server.port}`,
      instance,
      ...tlsOf(ca, cert),
      timeoutMs: 5000,
    });
  const alpha = await remote('alpha', 'alpha');
  await alpha.ensure({ agentId: 'a1', tenantId: 't', limits: DOCKER_DEFAULT_LIMITS });
  const channel = await alpha.open('known');
  const link = (await (await channel.link?.())?.accepted) as SandboxdPipe;
  link.output.write('ping');
  const echoed = await new Promise<string>((resolve) =>
    link.input.once('data', (c: Buffer) => resolve(String(c))),
  );
  expect(echoed).toBe('ping');
  link.close();
  channel.close();
  expect(asked).toEqual(['alpha ensure a1', 'alpha open known', 'alpha link']);

  asked.length = 0;
  const [a, b] = [await remote('both', 'alpha'), await remote('both', 'beta')];
  await a.capacity();
  await b.capacity();
  expect(asked).toEqual(['alpha capacity', 'beta capacity']);
  expect(forbidden).toEqual([]);
});

it('reports a refused instance once per connection (16 at most), naming the certificate', async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < 3; i++) expect((await call('beta', 'alpha', 'info', '{}', agent)).status).toBe(502);
    expect((await call('beta', 'gamma', 'info', '{}', agent)).status).toBe(502);
    expect((await call('beta', 'beta', 'info', '{}', agent)).status).toBe(200);
    expect(forbidden).toHaveLength(2);
    expect(forbidden[0]).toMatch(
      /^127\.0\.0\.1:\d+ alpha CN=beta, role urn:dsh:control-plane, instances beta$/,
    );
    expect(forbidden[1]).toMatch(/ gamma CN=beta, /);
    // Trying instance after instance on one connection: each refused, the first 16 reported.
    for (let i = 0; i < 30; i++)
      expect((await call('beta', `inst${i}`, 'info', '{}', agent)).status).toBe(502);
    expect(forbidden).toHaveLength(16);
  } finally {
    agent.destroy();
  }
  // A new connection reports again.
  await call('bare', 'alpha', 'info');
  expect(forbidden[16]).toMatch(/ alpha CN=bare, role urn:dsh:control-plane, instances none$/);
});

it('stops a control plane whose own certificate does not name its instance, before anything is sent', async () => {
  for (const cert of ['beta', 'bare'])
    await expect(
      connectRemoteNode({
        name: 'one',
        url: `https://127.0.0.1:${server.port}`,
        instance: 'alpha',
        ...tlsOf(ca, cert),
        timeoutMs: 5000,
      }),
    ).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(
        /^DSH_NODE_CERT: .* not instance alpha\. Make it again naming the instance: node scripts\/node-certs\.ts control <dir> <name> alpha/,
      ),
      data: { instance: 'alpha', node: 'one' },
    });
  expect(forbidden).toEqual([]);
  expect(asked).toEqual([]);
});

it('shows a node agent from before instances one role in a new control plane certificate (nodes upgrade after control planes)', () => {
  // Such a node agent counts every `urn:dsh:` URI among the subject alternative names as a role
  // (roles.ts at e863e0a) and refuses a certificate with more than one.
  const names = new X509Certificate(pem('both.pem')).subjectAltName ?? '';
  const olderRoles = names.split(', ').filter((entry) => entry.startsWith('URI:urn:dsh:'));
  expect(olderRoles).toEqual(['URI:urn:dsh:control-plane']);
  expect(names).toContain('URI:urn:dsh-instance:alpha');
});

it("links a channel only for the instance that opened it, whatever the other's certificate names", async () => {
  const opened = await upgrade('alpha', 'alpha', '/v1/open?agent=known');
  expect(opened.status).toBe(101);
  const channel = String(opened.headers?.['x-dsh-channel']);
  try {
    asked.length = 0;
    // Another instance's control plane that learnt the channel's id, with its own certificate and
    // instance (which the node serves), and one whose certificate names both instances.
    for (const cert of ['beta', 'both']) {
      const linked = await upgrade(cert, 'beta', `/v1/link?channel=${channel}`);
      linked.socket?.destroy();
      expect(linked.status).toBe(503);
    }
    expect(asked).toEqual([]);
    const own = await upgrade('alpha', 'alpha', `/v1/link?channel=${channel}`);
    own.socket?.destroy();
    expect(own.status).toBe(101);
  } finally {
    opened.socket?.destroy();
  }
});
