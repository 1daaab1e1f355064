// Shapes call events for the durable log. Root calls are part of the model's history (surface
// `current`); inner calls of programs, workflows and plugins are `log-only` and name their parent.
// An append is called synchronously where the call is (so events keep the order calls were made
// in) and awaited only for its verdict; the store batches the writes (and with libsql answers at
// once, an already settled promise). With replicas (a fenced log, EventLog.stored) the verdict is
// the write's: a call runs only once its `tool.call` is stored. A call the store refuses to
// record is not run (recordCall says why, as the call's error); large values and tenant budgets
// are the store's business (host/store/event-log-budget.ts). A call with a provenance (a plugin's code
// made it) is log-only too, even without a parent: it is no part of the model's history.
import { isSandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { EventLog, SessionEvent, SessionEventInput } from '../store/types.ts';
import { fail } from './outcomes.ts';
import type { CallProvenance, ToolError, ToolResult } from './types.ts';

const surfaceOf = (parentCallId: string | undefined, provenance: CallProvenance | undefined) =>
  parentCallId === undefined && provenance === undefined ? 'current' : 'log-only';

export const callEvent = (
  sessionId: string,
  id: string,
  name: string,
  args: unknown,
  parentCallId: string | undefined,
  provenance?: CallProvenance,
): SessionEventInput => {
  const data: { [key: string]: JsonValue } = { name, arguments: (args ?? null) as JsonValue };
  if (provenance !== undefined) data.provenance = { ...provenance };
  const event: SessionEventInput = {
    sessionId,
    type: 'tool.call',
    surface: surfaceOf(parentCallId, provenance),
    callId: id,
    data,
  };
  if (parentCallId !== undefined) event.parentCallId = parentCallId;
  return event;
};

export const resultEvent = (
  sessionId: string,
  result: ToolResult,
  parentCallId: string | undefined,
  provenance?: CallProvenance,
): SessionEventInput => {
  const data: { [key: string]: JsonValue } = {
    name: result.name,
    ok: result.ok,
    content: result.content as unknown as JsonValue,
    durationMs: result.durationMs,
  };
  // A redacted result's value is never stored (nor indexed, nor deduplicated as a payload).
  if (result.redacted) data.redacted = true;
  else if (result.value !== undefined) data.value = result.value;
  if (result.error !== undefined) data.error = result.error as unknown as JsonValue;
  if (result.attempts !== undefined) data.attempts = result.attempts;
  if (provenance !== undefined) data.provenance = { ...provenance };
  const event: SessionEventInput = {
    sessionId,
    type: 'tool.result',
    surface: surfaceOf(parentCallId, provenance),
    callId: result.id,
    data,
  };
  if (parentCallId !== undefined) event.parentCallId = parentCallId;
  return event;
};

/** Why a call was not run when its `tool.call` could not be recorded. */
const unrecorded = (error: unknown, name: string): ToolError => {
  if (isSandboxError(error) && error.code === 'STORE_BUDGET_EXCEEDED') {
    return {
      ...fail(
        'STORE_BUDGET_EXCEEDED',
        `The call to ${name} was not run: this tenant's event log is over its storage budget.`,
      ),
      data: { budget: (error.data?.budget as number | undefined) ?? null },
    };
  }
  if (isSandboxError(error) && error.code === 'OWNER_FENCED')
    return fail(
      'OWNER_FENCED',
      `The call to ${name} was not run: another replica may run this agent now. Retry the batch (with the same Idempotency-Key).`,
    );
  return fail('STORE_FAILED', `The call to ${name} could not be recorded, so it was not run; try again.`);
};

const recorded = (): undefined => undefined;
const appended = (): boolean => true;
const refused = (): boolean => false;

/**
 * Appends a call's `tool.call` event (now, in call order); resolves to the error to settle the call
 * with when the store refused it. Never rejects. One `then` and no async function: this is paid by
 * every call of the pipeline.
 */
export const recordCall = (
  log: EventLog,
  event: SessionEventInput,
  name: string,
): Promise<ToolError | undefined> => {
  const notRecorded = (error: unknown) => unrecorded(error, name);
  try {
    const appended = log.append([event]);
    // Replicas: the call runs once its record is stored, so the database's fence has admitted it.
    if (log.stored !== undefined) {
      const stored = log.stored.bind(log);
      return appended.then(
        (events) => stored(events[0] as SessionEvent).then(recorded, notRecorded),
        notRecorded,
      );
    }
    return appended.then(recorded, notRecorded);
  } catch (error) {
    return Promise.resolve(unrecorded(error, name));
  }
};

/**
 * Appends one event (now, in call order); resolves false when the store refused it (the caller
 * decides what that means). Never rejects, so callers may leave it unawaited.
 */
export const tryAppend = (log: EventLog, event: SessionEventInput): Promise<boolean> => {
  try {
    return log.append([event]).then(appended, refused);
  } catch {
    return Promise.resolve(false);
  }
};
