// A terminal attached from the console ends with the console session: signing out closes the
// WebSocket (1008, "console session ended") instead of leaving a shell open to whoever holds the
// tab, the same way the session's event stream ends.
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Running } from '../../../host/serve.ts';
import { json, served } from '../api/served.ts';

const s = served('console-socket');
let server: Running;
let key: string;

beforeAll(async () => {
  server = await s.current();
  key = (await server.store.tenants.createTenant('console-socket')).apiKey;
});

/** Signs in as the tenant: the session cookie and the page's CSRF token. */
const signIn = async (): Promise<{ cookie: string; csrf: string }> => {
  const res = await fetch(`${server.url}/console/signin`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: new URLSearchParams({ key, role: 'tenant' }).toString(),
  });
  expect(res.status).toBe(303);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const page = await (await fetch(`${server.url}/console/agents`, { headers: { cookie } })).text();
  const csrf = /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '';
  return { cookie, csrf };
};

describe('a console terminal socket', () => {
  it('is closed when its session signs out', async () => {
    const id = (await json(server, key, 'POST', '/v1/agents', { preset: 'creator' })).json.id as string;
    const opened = await json(server, key, 'POST', `/v1/agents/${id}/calls`, {
      calls: [{ id: 't1', name: 'terminal_open', arguments: { type: 'bash', name: 'console' } }],
    });
    const tid = opened.json.results[0].value.sessionId as string;
    const { cookie, csrf } = await signIn();

    const url = `${server.url.replace(/^http/, 'ws')}/console/agents/${id}/terminals/${tid}/socket`;
    const ws = new WebSocket(url, 'dsh.terminal.v1', { headers: { cookie, origin: server.url } });
    let output = '';
    ws.on('message', (data: Buffer) => {
      output += data.toString();
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(Buffer.from('echo socket-$((6*7))\n'));
    await expect.poll(() => output, { timeout: 20_000 }).toContain('socket-42');
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );

    const out = await fetch(`${server.url}/console/signout`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf }).toString(),
    });
    expect(out.status).toBe(303);
    const notClosed = new Promise<string>((resolve) =>
      setTimeout(() => resolve('still open after 15 s'), 15_000),
    );
    expect(await Promise.race([closed, notClosed])).toEqual({ code: 1008, reason: 'console session ended' });

    // The session is gone: a new socket with its cookie is refused before any upgrade.
    const again = new WebSocket(url, 'dsh.terminal.v1', { headers: { cookie, origin: server.url } });
    again.on('error', () => undefined);
    const refused = await new Promise<number>((resolve) => {
      again.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      again.once('open', () => {
        resolve(101);
        again.close();
      });
    });
    expect(refused).toBe(401);
  });
});
