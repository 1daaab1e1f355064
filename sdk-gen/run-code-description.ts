// The model-facing description of the run_code tool: how to write `code`, the limits a run has,
// then the generated declarations. It is sent with every request, so every sentence has to earn
// its place. Deterministic: the same SDK and limits give the same text.

const INSTRUCTIONS = [
  'Run TypeScript that calls tools through the typed `tools` SDK declared below.',
  '`code` is the BODY of an async function: call tools with `await tools.<name>(args)` and use `Promise.all` for independent calls.',
  '`console.log` output and the returned value are shown to you. Types are not checked.',
  'Each call goes through the same validation and policy as a direct tool call; side effects of earlier calls are not rolled back if a later one fails.',
  'Only `tools`, `console` and standard JavaScript built-ins exist (no require, import, fetch or process).',
  '`description`: a short summary of what the code does.',
].join('\n');

/** The budgets of one run, as the model is told them. */
export interface RunCodeLimits {
  /** CPU time of the program's own work, in ms; waiting on tools costs none of it. */
  cpuMs: number;
  /** Wall-clock time of the whole run, waiting on tools included, in ms. */
  wallMs: number;
  /** Memory of the program, in MB. */
  memoryMb?: number;
}

/** 200 ms, 10 s, 1.5 s, 10 min, 1 h 30 min: whole units where they fit, never locale-dependent. */
export const formatDuration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000 || ms % 60_000 !== 0) return `${Math.round(ms / 100) / 10} s`;
  const minutes = ms / 60_000;
  if (minutes < 60 || minutes % 60 !== 0) {
    const hours = Math.floor(minutes / 60);
    return hours === 0 ? `${minutes} min` : `${hours} h ${minutes % 60} min`;
  }
  return `${minutes / 60} h`;
};

const limitsLine = (limits: RunCodeLimits): string => {
  const memory = limits.memoryMb === undefined ? '' : `, ${limits.memoryMb} MB of memory`;
  return `Limits of one run: ${formatDuration(limits.cpuMs)} of CPU time for the program's own work${memory}, and ${formatDuration(limits.wallMs)} in all, time spent waiting on tools included (waiting costs no CPU time).`;
};

/** run_code's description for a generated SDK (`generateSdk(...).declarations`) and the run limits. */
export function runCodeDescription(sdk: string, limits?: RunCodeLimits): string {
  // A fence longer than any backtick run inside, so descriptions cannot close it.
  const longest = Math.max(0, ...Array.from(sdk.matchAll(/`+/g), (match) => match[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  const body = sdk.endsWith('\n') ? sdk : `${sdk}\n`;
  const instructions = limits === undefined ? INSTRUCTIONS : `${INSTRUCTIONS}\n${limitsLine(limits)}`;
  return `${instructions}\n\n${fence}ts\n${body}${fence}`;
}
