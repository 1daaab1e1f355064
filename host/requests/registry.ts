// Every kind of host request the service makes, and the answer union the API accepts for them.
// Adding a kind: one file under kinds/ and one entry in REQUEST_KINDS, appended (the order of first
// appearance fixes the union's order, and with it /openapi.json and its validation messages).
import * as v from 'valibot';
import { SandboxError } from '../errors.ts';
import type { RequestKind } from './kind.ts';
import { agentWakeupKind } from './kinds/agent-wakeup.ts';
import { approvalKind } from './kinds/approval.ts';
import { planReviewKind } from './kinds/plan-review.ts';
import { pluginClientQueryKind } from './kinds/plugin-client-query.ts';
import { reminderKind } from './kinds/reminder.ts';
import { remoteToolKind } from './kinds/remote-tool.ts';
import { subagentKind } from './kinds/subagent.ts';
import { userQuestionKind } from './kinds/user-question.ts';

export const REQUEST_KINDS: readonly RequestKind[] = [
  approvalKind,
  remoteToolKind,
  subagentKind,
  pluginClientQueryKind,
  userQuestionKind,
  planReviewKind,
  reminderKind,
  agentWakeupKind,
];

const byName = new Map(REQUEST_KINDS.map((kind) => [kind.name, kind]));
if (byName.size !== REQUEST_KINDS.length)
  throw new SandboxError('CONFIG_INVALID', 'Two host request kinds share a name; give each kind its own.');

export const requestKindOf = (name: string): RequestKind | undefined => byName.get(name);

/** The body POST /v1/agents/:id/requests/:rid accepts: every kind's answer shapes, each once. */
export const AnswerBody = v.union([...new Set(REQUEST_KINDS.flatMap((kind) => kind.answers))]);

/** An answer to a request of `kind` (already an AnswerBody): BAD_REQUEST unless the kind accepts it. */
export const checkAnswer = (kind: string, answer: unknown): void => {
  const known = requestKindOf(kind);
  if (known === undefined)
    throw new SandboxError('BAD_REQUEST', `Requests of kind ${JSON.stringify(kind)} cannot be answered.`);
  if (!v.is(known.answer, answer)) throw new SandboxError('BAD_REQUEST', known.wrongAnswer);
};
