// Rewrites every golden file from the current generator:
//   node tests/unit/sdk-gen/update-golden.ts
// (the same as `UPDATE_GOLDEN=1 npx vitest run --project unit tests/unit/sdk-gen`).
// Review the diff before committing: the golden files are the generator's spec.
import { goldenCases } from './cases.ts';
import { goldenPath, writeGolden } from './golden.ts';

for (const [name, render] of Object.entries(goldenCases)) {
  writeGolden(name, render());
  console.log(`wrote ${goldenPath(name)}`);
}
