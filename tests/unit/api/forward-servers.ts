// Two loopback HTTP servers for the forwarding tests (forward*.test.ts): an owner (a small Hono app
// standing in for the replica that owns the agent: it echoes what it got, streams, counts an
// upload, waits to be cancelled, and takes WebSocket upgrades) and a front (the replica a client
// reached), whose route sends every request to the owner. Both sign and check with one replica key.
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, upgradeWebSocket } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { requestId } from 'hono/request-id';
import { WebSocketServer } from 'ws';
import { clientSource } from '../../../host/api/client-address.ts';
import type { ApiEnv } from '../../../host/api/env.ts';
import { errorHandler } from '../../../host/api/errors.ts';
import {
  createForwarder,
  type ForwarderOptions,
  forwardByRoute,
  type Route,
} from '../../../host/api/forward/route.ts';
import { replicaKey } from '../../../host/api/forward/sign.ts';
import { upgradeTunnels } from '../../../host/api/forward/upgrade.ts';
import { verifyForwarded } from '../../../host/api/forward/verify.ts';

export const KEY = replicaKey(randomBytes(32));

export interface Listening {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** Serves `app` on 127.0.0.1 with WebSocket upgrades (and, with `tunnels`, forwarded ones). */
export const listen = (app: Hono<ApiEnv>, options: { tunnels?: boolean } = {}): Promise<Listening> => {
  const tunnels = options.tunnels ? upgradeTunnels(app.fetch) : undefined;
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => (protocols.has('dsh.terminal.v1') ? 'dsh.terminal.v1' : false),
  });
  return new Promise((resolve) => {
    const server = serve(
      { fetch: tunnels?.fetch ?? app.fetch, hostname: '127.0.0.1', port: 0, websocket: { server: wss } },
      () => {
        const { port } = server.address() as AddressInfo;
        resolve({
          server,
          url: `http://127.0.0.1:${port}`,
          close: () =>
            new Promise<void>((done) => {
              for (const ws of wss.clients) ws.terminate();
              server.closeAllConnections();
              server.close(() => done());
            }),
        });
      },
    ) as Server;
    tunnels?.attach(server);
  });
};

/** What the owner saw, for the tests to wait on. */
export interface OwnerState {
  uploaded: number;
  longStarted: boolean;
  longAborted: boolean;
  sse: ReadableStreamDefaultController<Uint8Array> | undefined;
  socketClosed: boolean;
  sseCancelled: boolean;
  lastAuthorization: string | undefined;
}

/** The owner: checks forwarded requests with KEY and answers from its routes. */
export const ownerApp = (state: OwnerState): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.onError(errorHandler());
  app.use(verifyForwarded({ key: KEY }));
  app.all('/v1/agents/:id/echo', async (c) => {
    c.header('x-owner', 'yes');
    return c.json({
      method: c.req.method,
      path: c.req.path,
      search: new URL(c.req.url).search,
      headers: Object.fromEntries(c.req.raw.headers),
      body: await c.req.text(),
      forwardedBy: c.get('forwardedBy') ?? null,
      client: clientSource(c.env, undefined) ?? null,
    });
  });
  app.put('/v1/agents/:id/upload', async (c) => {
    const reader = (c.req.raw.body as ReadableStream<Uint8Array>).getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read())
      state.uploaded += read.value.length;
    return c.json({ bytes: state.uploaded });
  });
  app.get('/v1/agents/:id/events', () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        state.sse = controller;
      },
      cancel() {
        state.sseCancelled = true;
      },
    });
    return new Response(body, {
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
    });
  });
  app.post('/v1/agents/:id/calls', async (c) => {
    state.longStarted = true;
    await new Promise((resolve) => c.req.raw.signal.addEventListener('abort', resolve, { once: true }));
    state.longAborted = true;
    return c.json({ cancelled: true });
  });
  app.get(
    '/v1/agents/:id/terminals/:tid',
    upgradeWebSocket((c) => ({
      onOpen(_event, ws) {
        state.lastAuthorization = c.req.header('authorization');
        ws.send(
          `hello ${c.req.param('tid')} from the owner, forwarded by ${c.get('forwardedBy') ?? 'nobody'}`,
        );
      },
      onMessage(event, ws) {
        if (typeof event.data === 'string' && event.data === 'bye') return ws.close(1000, 'owner says bye');
        ws.send(event.data as string | ArrayBuffer);
      },
      onClose() {
        state.socketClosed = true;
      },
    })),
  );
  return app;
};

export const newOwnerState = (): OwnerState => ({
  uploaded: 0,
  longStarted: false,
  longAborted: false,
  sse: undefined,
  socketClosed: false,
  sseCancelled: false,
  lastAuthorization: undefined,
});

/** The front: forwards every request as `route()` says, with its own signature check or not. */
export const frontApp = (
  route: (c: Context<ApiEnv>) => Route,
  options: { verify?: boolean; forwarder?: Partial<ForwarderOptions>; rewrap?: boolean } = {},
): { app: Hono<ApiEnv>; close(): void } => {
  const forwarder = createForwarder({ replica: { id: 'front', key: KEY }, ...options.forwarder });
  const app = new Hono<ApiEnv>();
  app.onError(errorHandler());
  app.use(requestId());
  if (options.verify !== false) app.use(verifyForwarded({ key: KEY }));
  // A middleware that made the request a new one over a web stream of the node request's body
  // (as a counting or decoding middleware would): the forwarder reads that, not the socket.
  if (options.rewrap)
    app.use(async (c, next) => {
      const body = c.req.raw.body;
      if (body !== null)
        c.req.raw = new Request(c.req.raw, {
          body: body.pipeThrough(new TransformStream()),
          duplex: 'half',
        } as RequestInit);
      await next();
    });
  app.use(forwardByRoute({ route, forwarder }));
  // As the console's terminal page does: its own upgrade turned into an in-process API request.
  app.get('/console/terminals/:tid', (c) => {
    const headers = new Headers({ authorization: 'Bearer console-session-key' });
    for (const name of [
      'upgrade',
      'connection',
      'sec-websocket-key',
      'sec-websocket-version',
      'sec-websocket-protocol',
    ])
      if (c.req.header(name) !== undefined) headers.set(name, c.req.header(name) as string);
    const url = new URL(`/v1/agents/a1/terminals/${c.req.param('tid')}`, c.req.url);
    return app.fetch(new Request(url, { headers }), c.env);
  });
  app.all('*', (c) => c.json({ servedBy: 'front' }));
  return { app, close: () => forwarder.close() };
};
