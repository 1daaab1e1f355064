// Public entry of host requests: things only the client can answer. The port the store implements,
// the await every asker uses, the kinds (one file each under kinds/) and the registry the API
// validates answers with. Depends only on host/errors.ts, host/json.ts and valibot.
export { ErrorAnswer, errorMessageOf, OutputAnswer, ResultAnswer } from './answers.ts';
export { type AwaitRequestInput, awaitRequest } from './await.ts';
export { defineRequestKind, jsonValue, type RequestKind, type Settlement } from './kind.ts';
export { agentWakeupKind } from './kinds/agent-wakeup.ts';
export { AllowAnswer, type ApprovalDecision, approvalKind } from './kinds/approval.ts';
export { type PlanReview, planReviewKind } from './kinds/plan-review.ts';
export { pluginClientQueryKind } from './kinds/plugin-client-query.ts';
export { reminderKind } from './kinds/reminder.ts';
export { remoteToolKind } from './kinds/remote-tool.ts';
export { type SubagentOutput, type SubagentPayload, subagentKind } from './kinds/subagent.ts';
export {
  Question,
  QuestionAnswer,
  type QuestionAnswers,
  QuestionOption,
  userQuestionKind,
} from './kinds/user-question.ts';
export type { HostRequest, HostRequestState, NewHostRequest, RequestStore } from './port.ts';
export { AnswerBody, checkAnswer, REQUEST_KINDS, requestKindOf } from './registry.ts';
