// The JSON body reader: invalid UTF-8 is refused (MALFORMED_JSON), never rewritten to U+FFFD, so
// a name, path or command the client did not send can never reach a tool; prototype keys are
// dropped. The same for POST /calls and for a tools/call over the agent's MCP endpoint.
import { describe, expect, it } from 'vitest';
import { makeApi } from '../api/harness.ts';

describe('JSON bodies', () => {
  it('invalid UTF-8 anywhere in a JSON body is 400 MALFORMED_JSON and nothing runs', async () => {
    const api = await makeApi();
    try {
      const agent = await api.createAgent(api.keyA);
      for (const bytes of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
        const body = new Uint8Array(
          Buffer.concat([
            Buffer.from('{"calls":[{"id":"u","name":"write","arguments":{"file_path":"f'),
            Buffer.from(bytes),
            Buffer.from('.txt","content":"x"}}]}'),
          ]),
        );
        const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/calls`, body, {
          'Content-Type': 'application/json',
        });
        expect(res.status, String(bytes)).toBe(400);
        expect(res.json.error).toEqual({
          code: 'MALFORMED_JSON',
          message: 'The request body is not valid UTF-8.',
        });
      }
      const events = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`);
      expect(events.json.events).toEqual([]);
      // Valid multi-byte UTF-8 (and a BOM) still works.
      const ok = await api.request(
        api.keyA,
        'POST',
        `/v1/agents/${agent.id}/calls`,
        new Uint8Array(
          Buffer.from(
            '\ufeff{"calls":[{"id":"ok","name":"write","arguments":{"file_path":"é✓😀.txt","content":"x"}}]}',
          ),
        ),
        { 'Content-Type': 'application/json' },
      );
      expect(ok.status).toBe(200);
      expect(ok.json.results[0].ok).toBe(true);
    } finally {
      await api.close();
    }
  });

  it('the MCP endpoint reads its body the same way: invalid UTF-8 is a parse error, prototype keys are dropped', async () => {
    const api = await makeApi();
    try {
      const agent = await api.createAgent(api.keyA);
      const mcp = (body: Uint8Array) =>
        api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/mcp`, body, {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        });
      const write = (args: Buffer) =>
        new Uint8Array(
          Buffer.concat([
            Buffer.from(
              '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":',
            ),
            args,
            Buffer.from('}}'),
          ]),
        );
      const bad = await mcp(
        write(
          Buffer.concat([
            Buffer.from('{"file_path":"f'),
            Buffer.from([0xff]),
            Buffer.from('.txt","content":"x"}'),
          ]),
        ),
      );
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ code: -32700 });
      expect((await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).json.events).toEqual([]);

      const poisoned = await mcp(
        write(
          Buffer.from(
            '{"file_path":"p.txt","content":"x","__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}',
          ),
        ),
      );
      expect(poisoned.status).toBe(200);
      const events = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).json.events;
      const logged = events.find((e: { type: string }) => e.type === 'tool.call');
      expect(logged.data.arguments).toEqual({ file_path: 'p.txt', content: 'x' });
    } finally {
      await api.close();
    }
  });
});
