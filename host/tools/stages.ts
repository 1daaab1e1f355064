// The policy stages around dispatch: the tools/pre-execute waterfall, monotonic guards and the
// `ask` round trip before it; the tools/post-execute waterfall after it. Both fail closed: a
// listener that throws before dispatch denies, one that throws after it fails the call.
import { messageOf } from '../errors.ts';
import type { CallEnv, Prepared } from './call-env.ts';
import { isContent } from './content.ts';
import type { CallView, Decision, Outcome } from './hooks.ts';
import { chainsOf } from './layers.ts';
import { beforeDispatch, fail, failed } from './outcomes.ts';
import type { ToolError } from './types.ts';

export const decide = async (
  env: CallEnv,
  prepared: Prepared,
  view: CallView,
): Promise<ToolError | undefined> => {
  const chains = chainsOf(env.state, env.layer);
  const name = prepared.call.name;
  let decision: Decision = { kind: 'allow' };
  for (const listener of chains.pre) {
    try {
      decision = (await listener(view, decision)) ?? decision;
    } catch (error) {
      // Fail closed: a policy that cannot decide does not let the call through.
      return fail('DENIED', `A policy check for ${name} failed (${messageOf(error)}); the call was not run.`);
    }
  }
  if (decision.kind === 'deny')
    return fail('DENIED', decision.reason || `Tool ${name} is not allowed by policy.`, decision.userReason);
  for (const guard of chains.guards) {
    let reason: ReturnType<typeof guard>;
    try {
      reason = guard(view);
    } catch (error) {
      reason = `a guard failed (${messageOf(error)})`;
    }
    if (typeof reason === 'string' && reason !== '') return fail('DENIED', reason);
    if (typeof reason === 'object' && reason !== null) return fail(reason.code, reason.reason);
  }
  if (decision.kind === 'ask') {
    if (env.signal.aborted) return beforeDispatch(name);
    if (env.approvals === undefined) {
      return fail(
        'DENIED',
        `Tool ${name} needs approval (${decision.reason}) but no approver is configured for this agent.`,
      );
    }
    try {
      const answer = await env.approvals.request({
        sessionId: env.agent.sessionId,
        callId: prepared.call.id,
        toolName: name,
        arguments: prepared.args,
        reason: decision.reason,
        signal: env.signal,
      });
      if (!answer.allow)
        return fail('DENIED', `Tool ${name} was not approved${answer.reason ? `: ${answer.reason}` : '.'}`);
    } catch (error) {
      if (env.signal.aborted) return beforeDispatch(name);
      return fail(
        'DENIED',
        `The approval request for ${name} failed (${messageOf(error)}); the call was not run.`,
      );
    }
  }
  return undefined;
};

export const postExecute = async (env: CallEnv, view: CallView, first: Outcome): Promise<Outcome> => {
  let outcome = first;
  for (const listener of chainsOf(env.state, env.layer).post) {
    let action: Awaited<ReturnType<typeof listener>>;
    try {
      action = await listener(view, outcome);
    } catch (error) {
      return failed(
        fail('TOOL_FAILED', `A post-execute policy for ${view.name} failed: ${messageOf(error)}`),
      );
    }
    if (action === undefined) continue;
    if (action.kind === 'block') {
      outcome = failed(fail('DENIED', action.feedback, action.userReason));
    } else if (outcome.ok) {
      const content: unknown =
        action.kind === 'replace'
          ? (action.content ?? outcome.content)
          : [...outcome.content, ...action.contexts];
      if (!isContent(content))
        return failed(
          fail('TOOL_FAILED', `A post-execute policy for ${view.name} produced invalid content.`),
        );
      const replacement = action.kind === 'replace' ? action.value : undefined;
      const value = replacement ?? outcome.value;
      // Content replaced without a value is a redaction: the raw value must not be stored or served.
      const redacted =
        replacement === undefined &&
        (outcome.redacted === true || (action.kind === 'replace' && action.content !== undefined));
      outcome = redacted ? { ok: true, value, content, redacted: true } : { ok: true, value, content };
    }
  }
  return outcome;
};
