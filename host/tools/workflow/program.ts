// The program a workflow script runs as in its isolate: a small runtime that builds the
// orchestration primitives on the two brokered bindings (`tools.agent`, `tools.phase`), then the
// script itself as the body of an inner async function whose parameters are exactly those
// primitives and `args`, with `tools`, `console` and the runtime's own names shadowed as undefined.
// Invariants: the runtime and the opening of the script's function sit on the program's first line,
// so the script's own line numbers appear unchanged in compile errors and stack traces; the whole
// program is strict, so the script cannot climb to the outer function through `arguments` or
// `caller`; `console` is removed from globalThis, so log() is the only way to print.

/** Names the script sees besides its own: the seed's primitives and `args`. */
export const PRIMITIVES = ['agent', 'pipeline', 'parallel', 'phase', 'log', 'args'] as const;
/** Names that exist in the program's outer function and must read as undefined in the script. */
const HIDDEN = ['tools', 'console', '__main', '__workflow'] as const;

// Written without line comments: it is joined onto one line. Intrinsics are captured before the
// script runs, so a script that rewrites Promise or Array changes only its own results.
const RUNTIME = `
'use strict';
const __workflow = ((bindings, print, G) => {
  const TypeError_ = TypeError, isArray = Array.isArray, all = Promise.all.bind(Promise);
  const then = Promise.prototype.then, apply = Reflect.apply, freeze = Object.freeze;
  const callAgent = bindings.agent, callPhase = bindings.phase;
  let current;
  const isObject = (v) => typeof v === 'object' && v !== null && !isArray(v);
  const agent = async (prompt, options) => {
    if (typeof prompt !== 'string' || prompt.length === 0)
      throw new TypeError_('agent(prompt, options?): prompt must be a non-empty string');
    if (options !== undefined && !isObject(options))
      throw new TypeError_('agent(prompt, options?): options must be an object');
    const step = { ...options, prompt };
    if (step.phase === undefined && current !== undefined) step.phase = current;
    const answer = await callAgent(step);
    return answer.value !== undefined ? answer.value : answer.text;
  };
  const parallel = async (thunks) => {
    if (!isArray(thunks) || thunks.some((t) => typeof t !== 'function'))
      throw new TypeError_('parallel(thunks): thunks must be an array of functions');
    return all(thunks.map((thunk) => thunk()));
  };
  const pipeline = async (items, ...stages) => {
    if (!isArray(items)) throw new TypeError_('pipeline(items, ...stages): items must be an array');
    if (stages.some((s) => typeof s !== 'function'))
      throw new TypeError_('pipeline(items, ...stages): every stage must be a function');
    return all(items.map(async (item, index) => {
      let value = item;
      for (const stage of stages) value = await stage(value, index);
      return value;
    }));
  };
  const phase = (title) => {
    if (typeof title !== 'string' || title.length === 0)
      throw new TypeError_('phase(title): title must be a non-empty string');
    current = title;
    apply(then, callPhase({ title }), [undefined, () => undefined]);
  };
  const log = (...parts) => { print(...parts); };
  delete G.console;
  return freeze({ agent, pipeline, parallel, phase, log });
})(tools, console.log, globalThis);
return await (async function (${[...PRIMITIVES, ...HIDDEN].join(', ')}) {`;

const HEAD = RUNTIME.trim()
  .split('\n')
  .map((line) => line.trim())
  .join(' ');

/** The JavaScript (an async function body for the isolate host) that runs `script`. */
export const workflowProgram = (script: string): string =>
  `${HEAD}${script}\n}).call(undefined, __workflow.agent, __workflow.pipeline, __workflow.parallel, __workflow.phase, __workflow.log, args);`;

const FRAME = /^(\s+at .*?\(?program\.ts:)(\d+):(\d+)(\)?)$/;

/**
 * A runtime failure's message with the stack frames made the script's own: frames inside the
 * runtime (line 1 before the script starts) and the closing wrapper line are dropped, and columns
 * on line 1 are shifted back by the runtime's length.
 */
export const scriptFrames = (message: string, script: string): string => {
  const lastLine = script.split('\n').length;
  const out: string[] = [];
  for (const line of message.split('\n')) {
    const frame = FRAME.exec(line);
    if (frame === null) {
      out.push(line);
      continue;
    }
    const row = Number(frame[2]);
    let column = Number(frame[3]);
    if (row > lastLine) continue;
    if (row === 1) {
      if (column <= HEAD.length) continue;
      column -= HEAD.length;
    }
    out.push(`${frame[1]}${row}:${column}${frame[4] ?? ''}`);
  }
  return out.join('\n');
};

/** The bindings the runtime calls; nothing else is brokered to the host. */
export const WORKFLOW_BINDINGS: readonly string[] = ['agent', 'phase'];
