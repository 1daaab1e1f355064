// Adversarial pass B: a hostile run_code program and a hostile stdio MCP server, through the public
// API with real containers and the real isolate host. What is tried here and not elsewhere: a
// program that pollutes the prototypes the prelude serialises its own error description with, and
// an MCP server (a program of the agent's, in its sandbox) that answers with wrong ids, twice,
// with hostile shapes and oversize lines, and floods the service with requests and notifications
// while never reading its input. Guarantee: each ends as a stable error of that call or run only,
// and the API process keeps serving the other tenant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Loose, startHarness, text } from './harness.ts';

let h: Harness;
let codeA: string;
let codeB: string;

const run = async (key: string, agent: string, code: string, id = 'p'): Promise<Loose> => {
  const [r] = await h.calls(key, agent, [[id, 'run_code', { code, description: 'probe' }]]);
  return r;
};

beforeAll(async () => {
  h = await startHarness({ isolateWorkers: 2 });
  codeA = await h.agent(h.keyA, { preset: 'code' });
  codeB = await h.agent(h.keyB, { preset: 'code' });
});

afterAll(async () => {
  await h?.close();
});

describe('run_code: prototypes the prelude relies on', () => {
  it('an Object.prototype.toJSON of the program leaves its thrown error its own, not "stalled"', async () => {
    const cases: [string, RegExp][] = [
      [
        `Object.prototype.toJSON = function () { throw new Error('tj'); }; throw new Error('boom');`,
        /Error: boom/,
      ],
      [`Object.prototype.toJSON = function () { return 'forged'; }; throw new Error('boom');`, /Error: boom/],
      [
        `Object.prototype.toJSON = function () { throw 1; }; null.x;`,
        /TypeError: Cannot read properties of null/,
      ],
      [
        `Object.prototype.toJSON = function () { throw 1; }; return await tools.glob({ pattern: 'x' });`,
        /not JSON-serialisable/,
      ],
    ];
    for (const [i, [code, expected]] of cases.entries()) {
      const r = await run(h.keyA, codeA, code, `tj${i}`);
      expect(r.ok, code).toBe(false);
      expect(r.error, code).toMatchObject({ code: 'CODE_RUN_FAILED', data: { kind: 'runtime' } });
      expect(text(r), code).toMatch(expected);
    }
  });
});
