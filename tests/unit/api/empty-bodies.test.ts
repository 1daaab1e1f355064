// Routes that take no options (round 5 of the adversarial pass found them accepting any body and
// ignoring it): their body is optional and, when sent, is the empty object `{}`. A field a client
// sends expecting it to matter (a snapshot's name, a step's tools, a mailbox limit) is refused
// with 400 BAD_REQUEST naming it, and so is a body that is not JSON, never silently dropped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, makeApi } from './harness.ts';

let api: Api;
beforeAll(async () => {
  api = await makeApi();
});
afterAll(() => api.close());

const routes = ['snapshots', 'steps', 'mailbox/take', 'resume'];

describe('POST routes without options', () => {
  it('refuse a body with fields, an array or a non-JSON body with 400 BAD_REQUEST', async () => {
    const agent = await api.createAgent(api.keyA);
    const wrong: string[] = [];
    for (const route of routes) {
      const path = `/v1/agents/${agent.id}/${route}`;
      for (const body of [{ name: 'before-refactor' }, [], 'plain words'] as unknown[]) {
        const res =
          typeof body === 'string'
            ? await api.request(api.keyA, 'POST', path, body, { 'Content-Type': 'text/plain' })
            : await api.request(api.keyA, 'POST', path, body);
        if (res.status !== 400 || res.json?.error?.code !== 'BAD_REQUEST')
          wrong.push(`${route} ${JSON.stringify(body)} -> ${res.status} ${res.text.slice(0, 120)}`);
      }
    }
    expect(wrong).toEqual([]);
    // The field is named.
    const named = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/steps`, { tools: ['read'] });
    expect(named.json.error.message).toContain('tools');
  });

  it('take no body, or {}, as before', async () => {
    const agent = await api.createAgent(api.keyA);
    for (const route of ['steps', 'mailbox/take', 'resume'])
      for (const body of [undefined, {}]) {
        const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/${route}`, body);
        expect(res.status, `${route} ${JSON.stringify(body)} ${res.text}`).toBeLessThan(300);
      }
  });
});
