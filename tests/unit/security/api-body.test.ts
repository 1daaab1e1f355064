// The JSON body reader: invalid UTF-8 is refused (MALFORMED_JSON), never rewritten to U+FFFD, so
// a name, path or command the client did not send can never reach a tool.
import { describe, expect, it } from 'vitest';
import { makeApi } from '../api/harness.ts';

describe('JSON bodies', () => {
  it('invalid UTF-8 anywhere in a JSON body is 400 MALFORMED_JSON and nothing runs', async () => {
    const api = makeApi();
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
});
