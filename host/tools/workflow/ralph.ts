// ralph: a fixed iterative workflow, run as a built-in script through the same runner as any
// workflow. Each round one subagent gets the objective and what the previous rounds reported; the
// loop stops when an answer begins with DONE (the convention the tool description states) or
// after maxRounds. Earlier reports are clipped so the prompt stays bounded however many rounds run.

export const RALPH_DEFAULT_ROUNDS = 8;
export const RALPH_MAX_ROUNDS = 64;

export const RALPH_META = Object.freeze({
  name: 'ralph',
  description: 'Work towards one objective in rounds of subagents until one reports DONE.',
});

export const RALPH_SCRIPT = String.raw`
const reports = [];
const clip = (text, max) => (text.length > max ? text.slice(0, max) + ' …' : text);
for (let round = 1; round <= args.maxRounds; round++) {
  phase('Round ' + round);
  const earlier = reports.slice(-8).map((r) => 'Round ' + r.round + ' reported:\n' + clip(r.text, 4000));
  const prompt = [
    'Objective: ' + args.objective,
    'This is round ' + round + ' of at most ' + args.maxRounds + '.',
    earlier.length === 0 ? 'This is the first round.' : earlier.join('\n\n'),
    'Work towards the objective and verify the result. Then report what you did and what remains.',
    'Begin your answer with DONE only if the objective is fully achieved and verified.',
  ].join('\n\n');
  const answer = await agent(prompt);
  const text = typeof answer === 'string' ? answer : JSON.stringify(answer);
  reports.push({ round, text });
  log('Round ' + round + ': ' + clip(text.split('\n')[0], 200));
  if (/^\s*DONE\b/.test(text)) return { done: true, rounds: round, report: text };
}
return { done: false, rounds: args.maxRounds, report: reports.length > 0 ? reports[reports.length - 1].text : '' };
`;
