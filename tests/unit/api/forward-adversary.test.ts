// Forwarding between replicas as bad luck and a hostile client would have it, over two real
// loopback servers (forward-servers.ts): a terminal tunnelled to an owner that stops answering
// (paused past its lease, cut off: its TCP connection stays open and says nothing) ends once the
// ownership finds the owner gone, as a forwarded request or event stream does, instead of hanging
// the client for good; and forged forwarding headers are refused whatever part of them is sent.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Route } from '../../../host/api/forward/route.ts';
import { until } from '../../helpers/until.ts';
import {
  frontApp,
  type Listening,
  listen,
  newOwnerState,
  type OwnerState,
  ownerApp,
} from './forward-servers.ts';

let state: OwnerState;
let owner: Listening;
let front: Listening;
let closeFront: () => void;
let route: Route;

beforeEach(async () => {
  state = newOwnerState();
  owner = await listen(ownerApp(state));
  const made = frontApp(() => route);
  closeFront = made.close;
  front = await listen(made.app, { tunnels: true });
});

afterEach(async () => {
  closeFront();
  await front.close();
  await owner.close();
});

describe('forwarding against bad luck and forged headers', () => {
  it('ends a tunnelled terminal once its owner is found gone (the route signal), not never', async () => {
    const gone = new AbortController();
    route = { kind: 'forward', url: owner.url, replicaId: 'owner', signal: gone.signal };
    const ws = new WebSocket(
      `${front.url.replace('http:', 'ws:')}/v1/agents/a1/terminals/t1`,
      ['dsh.terminal.v1'],
      {
        headers: { authorization: 'Bearer k' },
      },
    );
    const messages: string[] = [];
    ws.on('message', (data: Buffer) => messages.push(data.toString()));
    let closed = false;
    ws.on('close', () => {
      closed = true;
    });
    ws.on('error', () => undefined);
    await until(() => messages.length >= 1, { what: 'the greeting through the tunnel' });
    // The owner's lease ran out while it was silent: the ownership aborts what was forwarded to it.
    gone.abort();
    await until(() => closed, { what: "the client's terminal to end" });
  });

  it('ends a terminal at once when its owner was found gone before the tunnel was made', async () => {
    const gone = new AbortController();
    gone.abort();
    route = { kind: 'forward', url: owner.url, replicaId: 'owner', signal: gone.signal };
    const ws = new WebSocket(
      `${front.url.replace('http:', 'ws:')}/v1/agents/a1/terminals/t1`,
      ['dsh.terminal.v1'],
      {
        headers: { authorization: 'Bearer k' },
      },
    );
    const ended = new Promise<string>((resolve) => {
      ws.on('open', () => resolve('open'));
      ws.on('unexpected-response', (_req, res) => resolve(`HTTP ${res.statusCode}`));
      ws.on('close', () => resolve('closed'));
      ws.on('error', () => resolve('error'));
    });
    expect(await ended).toBe('HTTP 503');
    ws.terminate();
  });

  it('refuses every part of the forwarding headers a client sends, each alone and all together', async () => {
    route = { kind: 'local' };
    const forged: Record<string, string>[] = [
      { 'x-dsh-forwarded-by': 'replica-a' },
      { 'x-dsh-client-address': '10.0.0.1' },
      { 'x-dsh-forward-ts': String(Date.now()) },
      { 'x-dsh-forward-sig': 'AAAA' },
      {
        'x-dsh-forwarded-by': 'replica-a',
        'x-dsh-client-address': '10.0.0.1',
        'x-dsh-forward-ts': String(Date.now()),
        'x-dsh-forward-sig': Buffer.alloc(32).toString('base64url'),
      },
      // An empty signature (the one before is of the right length, all zeros).
      {
        'x-dsh-forwarded-by': 'replica-a',
        'x-dsh-forward-ts': String(Date.now()),
        'x-dsh-forward-sig': '',
      },
    ];
    for (const headers of forged) {
      const res = await fetch(`${front.url}/v1/agents/a1/anything`, {
        headers: { authorization: 'Bearer k', ...headers },
      });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('FORWARD_UNVERIFIED');
    }
  });
});
