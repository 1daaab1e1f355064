// The model-facing description of the run_code tool: how to write `code`, then the generated
// declarations. It is sent with every request, so every sentence has to earn its place.

const INSTRUCTIONS = [
  'Run TypeScript that calls tools through the typed `tools` SDK declared below.',
  '`code` is the BODY of an async function: call tools with `await tools.<name>(args)` and use `Promise.all` for independent calls.',
  '`console.log` output and the returned value are shown to you. Types are not checked.',
  'Each call goes through the same validation and policy as a direct tool call; side effects of earlier calls are not rolled back if a later one fails.',
  'Only `tools`, `console` and standard JavaScript built-ins exist (no require, import, fetch or process).',
  '`description`: a short summary of what the code does.',
].join('\n');

/** run_code's description for a generated SDK (`generateSdk(...).declarations`). */
export function runCodeDescription(sdk: string): string {
  // A fence longer than any backtick run inside, so descriptions cannot close it.
  const longest = Math.max(0, ...Array.from(sdk.matchAll(/`+/g), (match) => match[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  const body = sdk.endsWith('\n') ? sdk : `${sdk}\n`;
  return `${INSTRUCTIONS}\n\n${fence}ts\n${body}${fence}`;
}
