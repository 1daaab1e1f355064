// The compile cache: identical code is transformed by esbuild once, even when asked for concurrently,
// and a different language is a different entry.
import { describe, expect, it } from 'vitest';
import { compileProgram } from '../../../host/isolates/compile.ts';

describe('compileProgram', () => {
  it('compiles identical code once, also when the requests overlap', async () => {
    const code = `const n: number = ${Math.random()};\nreturn n`;
    const [a, b] = await Promise.all([compileProgram(code), compileProgram(code)]);
    expect(a).toBe(b);
    expect(await compileProgram(code)).toBe(a);
    expect(a.ok).toBe(true);
  });

  it('keys the cache by language as well as by code', async () => {
    const code = 'return 1';
    const ts = await compileProgram(code, 'ts');
    const js = await compileProgram(code, 'js');
    expect(js).not.toBe(ts);
    expect(js.ok && ts.ok).toBe(true);
  });

  it('caches failures like successes, with the model-facing position', async () => {
    const first = await compileProgram('return (');
    expect(first).toMatchObject({ ok: false });
    expect(await compileProgram('return (')).toBe(first);
  });

  // WAS A BUG: the API process's cache, shared by every tenant, was bounded by count only: 256
  // programs at the 256 KiB code limit kept 184 MiB of heap. Now it is bounded by size as well.
  it('lets big programs go once they pass its size bound, and keeps small recent ones', async () => {
    const big = (n: number) => `return ${n};\n${'// padding to the code limit\n'.repeat(8_000)}`;
    const first = compileProgram(big(-1));
    await first;
    for (let n = 0; n < 20; n++) await compileProgram(big(n)); // 20 × ~240 KB × 4 > 16 MiB
    const small = compileProgram('return "small";');
    expect(compileProgram(big(-1))).not.toBe(first);
    expect(compileProgram('return "small";')).toBe(small);
  });
});
