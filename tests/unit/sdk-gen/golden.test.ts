// Golden tests: exact expected output, so the files double as documentation of the format.
import { describe, expect, it } from 'vitest';
import { generateSdk } from '../../../sdk-gen/index.ts';
import { goldenCases } from './cases.ts';
import { catalogTools } from './fixtures/catalog.ts';
import { hostileTools } from './fixtures/hostile.ts';
import { readGolden, updateGolden, writeGolden } from './golden.ts';

describe('golden output', () => {
  for (const [name, render] of Object.entries(goldenCases)) {
    it(`${name} matches golden/${name}.txt`, () => {
      const actual = render();
      if (updateGolden) writeGolden(name, actual);
      expect(actual).toBe(readGolden(name));
    });
  }

  it('is byte-identical across runs and independent of earlier calls', () => {
    const first = generateSdk(catalogTools).declarations;
    generateSdk(hostileTools);
    expect(generateSdk(structuredClone(catalogTools)).declarations).toBe(first);
  });
});
