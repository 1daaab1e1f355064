// Maps a runtime error's stack from the isolate back to the model's own source and drops
// everything else: prelude frames, `<isolated-vm>` boundary frames, anything naming a host path.
// Only frames of the program itself survive, as `at <fn> (program.ts:<line>:<column>)`.
import { originalPositionFor, TraceMap } from '@jridgewell/trace-mapping';
import { SOURCE_NAME, WRAPPER_LINES } from './compile.ts';
import { PROGRAM_FILENAME, PROGRAM_LINE_OFFSET } from './prelude.ts';

const MAX_FRAMES = 8;
const FRAME = /^\s*at (?:(.*?) \()?(?:.*[ (])?program\.js:(\d+):(\d+)\)?\s*$/;

/** The program's frames of `stack`, mapped to the model's lines; empty when none can be mapped. */
export const mapStack = (stack: string, map: string): string[] => {
  if (!stack.includes(PROGRAM_FILENAME)) return [];
  let trace: TraceMap | undefined;
  const frames: string[] = [];
  for (const raw of stack.split('\n')) {
    const match = FRAME.exec(raw);
    if (!match) continue;
    trace ??= new TraceMap(map);
    const line = Number(match[2]) - PROGRAM_LINE_OFFSET;
    const column = Number(match[3]) - 1;
    if (line < 1) continue;
    const original = originalPositionFor(trace, { line, column });
    if (original.line === null) continue;
    const userLine = original.line - WRAPPER_LINES;
    if (userLine < 1) continue;
    const name = cleanName(match[1]);
    const where = `${SOURCE_NAME}:${userLine}:${original.column + 1}`;
    frames.push(name ? `    at ${name} (${where})` : `    at ${where}`);
    if (frames.length >= MAX_FRAMES) break;
  }
  return frames;
};

const cleanName = (name: string | undefined): string | undefined => {
  if (!name || name === '__main' || name === 'eval' || name.startsWith('eval at')) return undefined;
  const clean = name.replace(/^async /, '');
  // Names come from the program itself; keep them short and free of anything that looks like a location.
  return /^[\w$.<>[\] ]{1,80}$/.test(clean) && clean !== '__main' ? clean : undefined;
};
