// RemoteTransport's meter over a fetch that answers from memory: SSE framing however the server
// splits its chunks or ends its lines (\n or \r\n), an event past the message size, the byte
// budget, and what a cut session does after (nothing delivered, nothing sent, onclose once).
// The hostile server over the real gateway is tests/unit/api/mcp-remote-budget.test.ts.
import type { FetchLike, JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { REMOTE_BUDGET, RemoteTransport } from '../../../host/mcp-servers/remote-transport.ts';

const MAX = 4096;

/** A fetch whose POSTs answer `body` (split into `chunk`-byte pieces) as SSE; GETs answer 405. */
const fetchOf =
  (body: string, chunk: number, type = 'text/event-stream'): FetchLike =>
  async (_url, init) => {
    if ((init?.method ?? 'GET') === 'GET') return new Response(null, { status: 405 });
    const bytes = new TextEncoder().encode(body);
    let at = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.length) return controller.close();
        controller.enqueue(bytes.subarray(at, at + chunk));
        at += chunk;
      },
    });
    return new Response(stream, { headers: { 'content-type': type } });
  };

const event = (message: unknown, eol = '\n') =>
  `event: message${eol}data: ${JSON.stringify(message)}${eol}${eol}`;
const notice = (i: number, pad = 0) => ({
  jsonrpc: '2.0',
  method: 'notifications/message',
  params: { level: 'info', data: `${i}${'p'.repeat(pad)}` },
});
const answer = { jsonrpc: '2.0', id: 1, result: { content: [] } };
const request = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't' } } as JSONRPCMessage;

/** Sends one request over a transport reading `body`; what it delivered, why it was cut, its closes. */
async function exchange(body: string, chunk: number, budget = REMOTE_BUDGET, type?: string) {
  const got: JSONRPCMessage[] = [];
  const cuts: string[] = [];
  let closes = 0;
  const transport = new RemoteTransport(
    new URL('http://127.0.0.1:9/mcp'),
    { fetch: fetchOf(body, chunk, type) },
    { maxMessageBytes: MAX, budget, onCut: (why) => cuts.push(why) },
  );
  const answered = new Promise<void>((resolve) => {
    transport.onmessage = (m) => {
      got.push(m);
      if ('id' in m && !('method' in m)) resolve();
    };
    transport.onclose = () => {
      closes++;
      resolve();
    };
  });
  await transport.start();
  await transport.send(request).catch(() => {});
  await answered;
  return { transport, got, cuts, closes: () => closes };
}

describe('RemoteTransport', () => {
  it('frames SSE events however the chunks split them, with \\n or \\r\\n line ends', async () => {
    // 40 events of ~1 KiB: 40 KiB in all, each under the 4 KiB message size.
    for (const eol of ['\n', '\r\n']) {
      const body =
        Array.from({ length: 40 }, (_, i) => event(notice(i, 1000), eol)).join('') + event(answer, eol);
      for (const chunk of [1, 7, 1024, 1 << 20]) {
        const { got, cuts } = await exchange(body, chunk);
        expect(cuts, `${JSON.stringify(eol)} ${chunk}`).toEqual([]);
        expect(got.length, `${JSON.stringify(eol)} ${chunk}`).toBe(41);
      }
    }
  });

  it('cuts an SSE event past the message size before the SDK sees it, whatever the line ends', async () => {
    for (const eol of ['\n', '\r\n']) {
      const lines = Array.from({ length: 10 }, () => `data: ${'x'.repeat(500)}${eol}`).join('');
      const body = `${event(notice(0), eol)}${lines}${eol}${event(answer, eol)}`;
      const { got, cuts, closes, transport } = await exchange(body, 256);
      expect(cuts).toEqual([`it sent an event over ${MAX} bytes`]);
      expect(got.length).toBe(1); // the notice before it, nothing after
      expect(closes()).toBe(1);
      // A cut session sends nothing more.
      await expect(transport.send(request)).rejects.toMatchObject({
        code: 'MCP_SERVER_FAILED',
        message: `The MCP server was stopped: it sent an event over ${MAX} bytes.`,
      });
      await transport.close();
      expect(closes()).toBe(1);
    }
  });

  it('cuts a JSON body past the message size', async () => {
    const body = JSON.stringify({
      ...answer,
      result: { content: [{ type: 'text', text: 'j'.repeat(MAX) }] },
    });
    const { got, cuts } = await exchange(body, 1000, REMOTE_BUDGET, 'application/json');
    expect(cuts).toEqual([`it sent a message over ${MAX} bytes`]);
    expect(got).toEqual([]);
    // Within the size it is taken.
    const small = await exchange(JSON.stringify(answer), 3, REMOTE_BUDGET, 'application/json');
    expect(small.cuts).toEqual([]);
    expect(small.got).toEqual([answer]);
  });

  it('charges every byte and line of the session against its budgets', async () => {
    const body = Array.from({ length: 100 }, (_, i) => event(notice(i, 200))).join('') + event(answer);
    const bytes = { ...REMOTE_BUDGET, burstBytes: 10_000, bytesPerSecond: 1 };
    const byBytes = await exchange(body, 512, bytes);
    expect(byBytes.cuts[0]).toMatch(
      /^it sent more than its output budget \(10000 lines or 10000 bytes at once/,
    );
    expect(byBytes.got.length).toBeLessThan(50);
    const lines = { ...REMOTE_BUDGET, burstLines: 100, linesPerSecond: 1 };
    const byLines = await exchange(body, 512, lines);
    expect(byLines.cuts[0]).toMatch(/^it sent more than its output budget \(100 lines/);
    const unasked = { ...REMOTE_BUDGET, burstUnasked: 10, unaskedPerSecond: 1 };
    const byUnasked = await exchange(body, 512, unasked);
    expect(byUnasked.cuts[0]).toMatch(/^it sent more messages nobody asked for than its budget \(10 at once/);
    expect(byUnasked.got.length).toBe(10);
  });
});
