// No function of the runtime code is over 120 lines, nested closures included (a factory counts with
// what it holds): a factory wires parts that live in modules of their own, the way the isolate host
// does (docs/architecture.md). Generated code is not held to it.
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { longFunctions } from '../../../scripts/long-functions.ts';

it('no runtime function is over 120 lines (node scripts/long-functions.ts lists them)', () => {
  expect(longFunctions(120, fileURLToPath(new URL('../../../', import.meta.url)))).toEqual([]);
});
