// The golden cases: each name maps to the exact text stored in golden/<name>.txt. One table
// serves the test (golden.test.ts) and the rewrite script (update-golden.ts).
import { generateSdk, runCodeDescription } from '../../../sdk-gen/index.ts';
import { catalogTools } from './fixtures/catalog.ts';
import { hostileTools } from './fixtures/hostile.ts';
import { nameTools } from './fixtures/names.ts';
import { recursiveTools } from './fixtures/recursive.ts';

export const goldenCases: Record<string, () => string> = {
  'catalog.d.ts': () => generateSdk(catalogTools).declarations,
  'names.d.ts': () => generateSdk(nameTools).declarations,
  'recursive.d.ts': () => generateSdk(recursiveTools).declarations,
  'hostile.d.ts': () => generateSdk(hostileTools).declarations,
  'run-code-description.md': () => runCodeDescription(generateSdk(catalogTools).declarations),
  'run-code-description-limits.md': () =>
    runCodeDescription(generateSdk(catalogTools).declarations, {
      cpuMs: 10_000,
      wallMs: 600_000,
      memoryMb: 64,
    }),
};
