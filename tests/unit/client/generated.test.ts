// client/openapi.ts is generated (client/generate.ts) and checked in; it must be exactly what the
// generator makes of the service's current /openapi.json, so the typed client cannot drift.
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { GENERATED_PATH, generate } from '../../../client/generate.ts';

it('client/openapi.ts is what `node client/generate.ts` makes of the current API', async () => {
  const checkedIn = readFileSync(GENERATED_PATH, 'utf8');
  expect(await generate(), 'run `node client/generate.ts` and commit the result').toBe(checkedIn);
});
