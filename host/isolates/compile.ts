// Turns the model's function body into the JavaScript an isolate runs, in the HOST process: esbuild
// is its own Go process and only ever sees the source as data. The body is wrapped as
// `async function __main(tools, console) {\n<body>\n}` (esbuild cannot transform a top-level
// return/await), types are stripped (no type checking), and the sourcemap is kept so that compile
// errors and runtime stack frames point at the model's own lines. Invariant: the wrapper adds
// exactly WRAPPER_LINES line before the body, so "wrapped line - 1" is the model's line.
// esbuild's JavaScript side loads at the first compile, not with the service.
// esbuild is one process for every tenant, and its parser, visitor and printer recurse once per
// level of nesting: a program of a few hundred KB nested deeply without brackets (`!!!…1`,
// `if(1)if(1)…`, labels, arrows) held it for minutes at GBs of memory, or ran its goroutine stack
// past Go's 1 GB and ended the process, after which every compile of every tenant failed until the
// service restarted. So a compile has a deadline (COMPILE_DEADLINE_MS, ~40× what 250 KB of ordinary
// code takes): past it esbuild is stopped (its work and memory with it) and the program refused as
// `limit`; a service that died or was stopped is replaced at the next compile, and a program that
// was only caught in someone else's crash is compiled once more and never cached as failed.

import type { TransformFailure } from 'esbuild';

const WRAPPER_HEAD = 'async function __main(tools, console) {\n';
export const WRAPPER_LINES = 1;
/** Name the model's code carries in every message it sees. */
export const SOURCE_NAME = 'program.ts';

export interface CompiledProgram {
  /** Defines `__main`; run it with the AsyncFunction constructor (see prelude.ts). */
  js: string;
  /** esbuild's sourcemap (JSON text) from `js` back to the wrapped source. */
  map: string;
}

export type CompileResult =
  | { ok: true; program: CompiledProgram }
  /** `kind`: `limit` when the code could not be compiled within the deadline; else a compile error. */
  | { ok: false; message: string; kind?: 'limit' };

/** How long one compile may take before esbuild is stopped and the program refused. */
export const COMPILE_DEADLINE_MS = 2_000;

const CACHE_SIZE = 256;
/**
 * What the cache may hold, counted as code characters × CACHE_WEIGHT (the key, the JavaScript and
 * the sourcemap: ~3.2× the code). The cache is the API process's, shared by every tenant: by count
 * alone, 256 distinct programs at the 256 KiB code limit kept 184 MiB of heap until other programs
 * pushed them out.
 */
const CACHE_BYTES = 16 * 1024 * 1024;
const CACHE_WEIGHT = 4;
// Workflow and plugin scripts are compiled again and again; model programs rarely repeat. The
// promise is cached, so identical code compiled concurrently goes to esbuild once; transformBody
// never rejects.
const cache = new Map<string, Promise<CompileResult>>();
let cachedBytes = 0;
const weightOf = (key: string): number => key.length * CACHE_WEIGHT;
let esbuild: Promise<typeof import('esbuild')> | undefined;
/** esbuild, imported once for every compile (concurrent first compiles share the one import). */
const loadEsbuild = (): Promise<typeof import('esbuild')> => (esbuild ??= import('esbuild'));
/**
 * Which esbuild service a compile went to: stopping it bumps this, and esbuild starts a new one at
 * the next transform. A compile stops the service only if it is still the one the compile used, so
 * a late failure never kills the service that replaced it (and the compiles running there).
 */
let generation = 0;
const restart = (esb: typeof import('esbuild'), used: number): void => {
  if (used !== generation) return;
  generation++;
  void esb.stop();
};
/** What esbuild rejects every compile with once its process is gone (crashed, or stopped here). */
const SERVICE_GONE = /^The service (?:was stopped|is no longer running)/;
const serviceGone = (error: unknown): boolean => error instanceof Error && SERVICE_GONE.test(error.message);

/**
 * Each owner's compiles not yet settled, one after another: the tail of its lane. Why: esbuild
 * compiles every tenant's programs, and one tenant's concurrent hostile compiles would each hold a
 * core for up to COMPILE_DEADLINE_MS; in a lane they hold one at a time. A compile takes ~1 ms,
 * so a tenant's honest concurrent programs barely notice.
 */
const lanes = new Map<string, Promise<unknown>>();
const inLane = <T>(owner: string | undefined, work: () => Promise<T>): Promise<T> => {
  if (owner === undefined) return work();
  const mine = (lanes.get(owner) ?? Promise.resolve()).then(work);
  const tail = mine.then(
    () => undefined,
    () => undefined,
  );
  lanes.set(owner, tail);
  void tail.then(() => {
    if (lanes.get(owner) === tail) lanes.delete(owner);
  });
  return mine;
};

/**
 * The program compiled, from the cache when the same code was compiled before (by any owner);
 * else in `owner`'s lane (the service passes the tenant id).
 */
export const compileProgram = (
  code: string,
  language: 'ts' | 'js' = 'ts',
  owner?: string,
): Promise<CompileResult> => {
  const key = `${language}\0${code}`;
  let result = cache.get(key);
  if (result !== undefined) cache.delete(key);
  else {
    const made = inLane(owner, () => transformBody(code, language));
    result = made.then((outcome) => {
      // A compile lost to the compiler's own failure says nothing about the code: not kept.
      if (outcome === LOST && cache.get(key) === result) {
        cache.delete(key);
        cachedBytes -= weightOf(key);
      }
      return outcome;
    });
    cachedBytes += weightOf(key);
  }
  cache.set(key, result);
  while (cache.size > CACHE_SIZE || cachedBytes > CACHE_BYTES) {
    const oldest = cache.keys().next().value as string;
    cache.delete(oldest);
    cachedBytes -= weightOf(oldest);
  }
  return result;
};

/** The answer for a program whose compile the compiler's failure ended twice (not cached). */
const LOST: CompileResult = Object.freeze({
  ok: false,
  message:
    'the compiler stopped twice while compiling this code: it may be nested too deeply to compile (flatten it), or another program broke the compiler (run it again)',
});
const TOO_SLOW: CompileResult = Object.freeze({
  ok: false,
  kind: 'limit',
  message: `the code took longer than ${COMPILE_DEADLINE_MS} ms to compile (is it nested thousands of levels deep?)`,
});

/** esbuild's transform under the deadline; undefined when the deadline passed (esbuild stopped). */
const transformWithin = async (
  esb: typeof import('esbuild'),
  source: string,
  language: 'ts' | 'js',
): Promise<import('esbuild').TransformResult | undefined> => {
  const used = generation;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), COMPILE_DEADLINE_MS);
  });
  const work = esb.transform(source, {
    loader: language,
    target: 'es2022',
    sourcemap: 'external',
    sourcefile: SOURCE_NAME,
    sourcesContent: false,
    logLevel: 'silent',
  });
  try {
    const out = await Promise.race([work, late]);
    if (out === undefined) {
      work.catch(() => undefined); // rejected by the stop below
      restart(esb, used);
    }
    return out;
  } catch (error) {
    if (serviceGone(error)) restart(esb, used);
    throw error;
  } finally {
    clearTimeout(timer);
  }
};

const transformBody = async (code: string, language: 'ts' | 'js', again = false): Promise<CompileResult> => {
  const lines = code.split('\n');
  const userLines = lines.length;
  const lastLineLength = lines[userLines - 1]?.length ?? 0;
  try {
    const esb = await loadEsbuild();
    const out = await transformWithin(esb, `${WRAPPER_HEAD}${code}\n}`, language);
    if (out === undefined) return TOO_SLOW;
    return { ok: true, program: { js: out.code, map: out.map } };
  } catch (error) {
    // The service died under this compile (maybe its own doing): once more on a fresh one.
    if (serviceGone(error)) return again ? LOST : transformBody(code, language, true);
    const errors = (error as Partial<TransformFailure>).errors;
    if (!Array.isArray(errors) || errors.length === 0) {
      return { ok: false, message: 'the code could not be compiled' };
    }
    const lines = errors.slice(0, 5).map((e) => {
      const loc = e.location;
      if (!loc) return e.text;
      const line = loc.line - WRAPPER_LINES;
      // Past the model's last line means the wrapper's closing `}`: the code ended too early.
      if (line > userLines)
        return `${SOURCE_NAME}:${userLines}:${lastLineLength + 1}: Unexpected end of code`;
      return `${SOURCE_NAME}:${Math.max(line, 1)}:${loc.column + 1}: ${e.text}`;
    });
    if (errors.length > 5) lines.push(`… and ${errors.length - 5} more errors`);
    return { ok: false, message: lines.join('\n') };
  }
};
