// The control plane's connections to a node (host/sandbox/nodes/remote/transport.ts): calls share a
// kept-alive TLS connection instead of a handshake each (the health probe alone asks every 2 s),
// and a kept-alive connection the node side closed while idle never fails a call: it is dropped,
// or the call is sent once more on a new one. A TCP relay between the two counts and cuts them.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectRemoteNode, type RemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import { type NodeServer, serveNode } from '../../../host/sandbox/nodes/remote/server.ts';
import { makeCa, makeCert, makeControlCert } from '../../../scripts/node-certs.ts';
import { fakeNode } from '../../helpers/fake-node.ts';
import { servingAs, tlsOf } from '../../helpers/node-tls.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-node-transport-'));

const fake = fakeNode('fake');

let server: NodeServer;
let relay: Server;
let node: RemoteNode;
/** The relay's connections, open ones and how many were ever made. */
const open = new Set<Socket>();
let made = 0;

beforeAll(async () => {
  makeCa(dir);
  makeCert(dir, dir, 'one', ['127.0.0.1']);
  makeControlCert(dir, dir, 'control', ['test']);
  server = await serveNode({
    ...servingAs(dir),
    nodeFor: () => fake,
  });
  relay = createServer((client) => {
    made += 1;
    const upstream = connect(server.port, '127.0.0.1');
    open.add(client);
    client.once('close', () => {
      open.delete(client);
      upstream.destroy();
    });
    upstream.once('close', () => client.destroy());
    client.on('error', () => {});
    upstream.on('error', () => {});
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  node = await connectRemoteNode({
    name: 'one',
    url: `https://127.0.0.1:${(relay.address() as { port: number }).port}`,
    instance: 'test',
    ...tlsOf(dir, 'control'),
    timeoutMs: 5000,
  });
});

afterAll(async () => {
  await node?.close();
  for (const socket of open) socket.destroy();
  await new Promise<void>((resolve) => relay?.close(() => resolve()));
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('sends calls one after another over one kept-alive connection', async () => {
  for (let i = 0; i < 10; i++) expect(await node.state('known')).toBe('running');
  expect(made).toBe(1); // the connection of the first call (connectRemoteNode's `info`)
});

it('answers a call after the node side closed the idle connection, again and again', async () => {
  for (let i = 0; i < 10; i++) {
    expect(await node.state('known')).toBe('running');
    // The node side goes away between calls, as a node's keep-alive timeout or a restart does.
    for (const socket of open) socket.destroy();
  }
  expect(await node.state('known')).toBe('running');
});
