// Turns the model's function body into the JavaScript an isolate runs, in the HOST process: esbuild
// is its own Go process and only ever sees the source as data. The body is wrapped as
// `async function __main(tools, console) {\n<body>\n}` (esbuild cannot transform a top-level
// return/await), types are stripped (no type checking), and the sourcemap is kept so that compile
// errors and runtime stack frames point at the model's own lines. Invariant: the wrapper adds
// exactly WRAPPER_LINES line before the body, so "wrapped line - 1" is the model's line.
// esbuild's JavaScript side loads at the first compile, not with the service.

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

export type CompileResult = { ok: true; program: CompiledProgram } | { ok: false; message: string };

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

export const compileProgram = (code: string, language: 'ts' | 'js' = 'ts'): Promise<CompileResult> => {
  const key = `${language}\0${code}`;
  let result = cache.get(key);
  if (result !== undefined) cache.delete(key);
  else {
    result = transformBody(code, language);
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

const transformBody = async (code: string, language: 'ts' | 'js'): Promise<CompileResult> => {
  const lines = code.split('\n');
  const userLines = lines.length;
  const lastLineLength = lines[userLines - 1]?.length ?? 0;
  try {
    const { transform } = await loadEsbuild();
    const out = await transform(`${WRAPPER_HEAD}${code}\n}`, {
      loader: language,
      target: 'es2022',
      sourcemap: 'external',
      sourcefile: SOURCE_NAME,
      sourcesContent: false,
      logLevel: 'silent',
    });
    return { ok: true, program: { js: out.code, map: out.map } };
  } catch (error) {
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
