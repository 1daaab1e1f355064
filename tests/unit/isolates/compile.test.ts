// The compile cache: identical code is transformed by esbuild once, even when asked for concurrently,
// and a different language is a different entry.

import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { COMPILE_DEADLINE_MS, compileProgram } from '../../../host/isolates/compile.ts';

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

// WAS A BUG (adversarial pass, code mode): esbuild is one process for every tenant. A program of
// 210 KB nested 15,000 functions deep held it for over a minute; `!` 200,000 times (or 40,000
// nested `if(1)`) ran its goroutine stack past Go's 1 GB and ended it, after which every compile
// of every tenant answered "the code could not be compiled" until the service restarted.
describe('compileProgram against hostile nesting', () => {
  const esbuildPids = (): number[] => {
    try {
      return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'esbuild'], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line !== '')
        .map(Number);
    } catch {
      return []; // pgrep exits 1 when it finds none
    }
  };

  it('refuses code that esbuild cannot compile within the deadline, as limit, and compiles the next', async () => {
    const nested = `${'function f(){'.repeat(15_000)}${'}'.repeat(15_000)}\nreturn 1`;
    const started = performance.now();
    const refused = await compileProgram(nested);
    expect(refused).toMatchObject({ ok: false, kind: 'limit' });
    expect(performance.now() - started).toBeLessThan(COMPILE_DEADLINE_MS * 4);
    expect(await compileProgram(nested)).toBe(refused); // kept: asking again costs nothing
    expect(await compileProgram(`return ${Math.random()}`)).toMatchObject({ ok: true });
  }, 30_000);

  it('replaces an esbuild that died, and compiles what it was compiling then once more', async () => {
    await compileProgram(`return ${Math.random()}`);
    const pids = esbuildPids();
    expect(pids.length).toBeGreaterThan(0);
    // A crash under a compile in flight (a Go stack overflow ends the process the same way).
    const code = `return ${Math.random()}`;
    const inFlight = compileProgram(code);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    expect(await inFlight).toMatchObject({ ok: true });
    expect(await compileProgram(`const later: number = ${Math.random()};\nreturn later`)).toMatchObject({
      ok: true,
    });
  });
});

describe("compileProgram: each owner's compiles one at a time", () => {
  it("an owner's next compile waits for its slow one; another owner's does not", async () => {
    const order: string[] = [];
    const nested = `${'function g(){'.repeat(15_000)}${'}'.repeat(15_000)}\nreturn ${Math.random()}`;
    const slow = compileProgram(nested, 'ts', 'tenant-a').then((r) => {
      order.push('a-slow');
      return r;
    });
    const next = compileProgram(`return ${Math.random()}`, 'ts', 'tenant-a').then((r) => {
      order.push('a-next');
      return r;
    });
    const other = compileProgram(`return ${Math.random()}`, 'ts', 'tenant-b').then((r) => {
      order.push('b');
      return r;
    });
    expect(await other).toMatchObject({ ok: true });
    expect(order).toEqual(['b']);
    expect(await slow).toMatchObject({ ok: false, kind: 'limit' });
    expect(await next).toMatchObject({ ok: true });
    expect(order).toEqual(['b', 'a-slow', 'a-next']);
  }, 30_000);
});
