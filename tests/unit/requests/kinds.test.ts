// Host request kinds over the in-memory RequestStore: what each asker gets for each way a request
// can end, that the store only ever holds payloads a kind describes, and that the API's answer
// union and per-kind check follow from the registry (so a new kind is one file plus one entry).
import * as v from 'valibot';
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../host/json.ts';
import {
  AnswerBody,
  approvalKind,
  awaitRequest,
  checkAnswer,
  defineRequestKind,
  planReviewKind,
  REQUEST_KINDS,
  type RequestKind,
  remoteToolKind,
  subagentKind,
  userQuestionKind,
} from '../../../host/requests/index.ts';
import { createMemoryRequestStore } from '../../../host/store/memory.ts';
import { until } from '../../helpers/until.ts';

const stores: ReturnType<typeof createMemoryRequestStore>[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
});

/** Asks one request of `kind`, then settles it with `answer` ('expire' | 'cancel' | a JSON answer). */
const settleWith = async <P, O>(
  kind: RequestKind<P, unknown, O>,
  payload: P,
  answer: JsonValue | 'expire' | 'cancel',
): Promise<O> => {
  const store = createMemoryRequestStore();
  stores.push(store);
  const asked = awaitRequest(store, kind, {
    sessionId: 's1',
    callId: 'c1',
    payload,
    ttlMs: answer === 'expire' ? 20 : 60_000,
  });
  const request = await until(async () => (await store.list('s1', 'pending'))[0], {
    what: 'the pending request',
  });
  if (answer === 'cancel') await store.cancel(request.id);
  else if (answer !== 'expire') await store.answer(request.id, answer);
  return asked;
};

const approval = { toolName: 'write', arguments: { file_path: 'a' }, reason: 'policy asks' };
const remote = { toolName: 'lookup_user', arguments: { id: 7 } };
const step = { prompt: 'Review the store', workflow: 'review' };

describe('approval requests', () => {
  it('allow only on an explicit { allow: true }; every other ending is a denial with a reason', async () => {
    expect(await settleWith(approvalKind, approval, { allow: true, reason: 'fine' })).toEqual({
      allow: true,
    });
    expect(await settleWith(approvalKind, approval, { allow: false })).toEqual({ allow: false });
    expect(await settleWith(approvalKind, approval, { allow: false, reason: 'not prod' })).toEqual({
      allow: false,
      reason: 'not prod',
    });
    expect(await settleWith(approvalKind, approval, { allow: 'yes' })).toEqual({
      allow: false,
      reason: 'the approval answer was malformed',
    });
    expect(await settleWith(approvalKind, approval, 'expire')).toEqual({
      allow: false,
      reason: 'nobody answered the approval request in time',
    });
    expect(await settleWith(approvalKind, approval, 'cancel')).toEqual({
      allow: false,
      reason: 'the approval request was cancelled',
    });
  });
});

describe('remote tool requests', () => {
  it('{ result } is the value; { error }, expiry and cancellation fail the call with stable codes', async () => {
    expect(await settleWith(remoteToolKind, remote, { result: { name: 'Ada' } })).toEqual({ name: 'Ada' });
    expect(await settleWith(remoteToolKind, remote, { result: null })).toBeNull();
    // `{ output }` is the result under the name some harnesses use, never dropped.
    expect(await settleWith(remoteToolKind, remote, { output: { name: 'Ada' } })).toEqual({ name: 'Ada' });
    await expect(settleWith(remoteToolKind, remote, { error: 'offline' })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'offline',
    });
    await expect(
      settleWith(remoteToolKind, remote, { error: { message: 'no such user' } }),
    ).rejects.toMatchObject({ code: 'TOOL_FAILED', message: 'no such user' });
    await expect(settleWith(remoteToolKind, remote, { allow: true })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'The client answered the lookup_user call with something other than { result } or { error }.',
    });
    await expect(settleWith(remoteToolKind, remote, 'expire')).rejects.toMatchObject({
      code: 'REQUEST_EXPIRED',
      message: 'The client did not answer the lookup_user call within 20 ms.',
    });
    await expect(settleWith(remoteToolKind, remote, 'cancel')).rejects.toMatchObject({ code: 'ABORTED' });
  });
});

describe('subagent requests', () => {
  it('reads text, { text, value } and output; an error, a result without text, expiry and cancellation fail the step', async () => {
    expect(await settleWith(subagentKind, step, { result: 'Looks fine.' })).toEqual({ text: 'Looks fine.' });
    expect(await settleWith(subagentKind, step, { output: { text: 'ok', value: { n: 1 } } })).toEqual({
      text: 'ok',
      value: { n: 1 },
    });
    await expect(settleWith(subagentKind, step, { error: { message: '' } })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'The subagent failed: no reason given',
    });
    await expect(settleWith(subagentKind, step, { result: 5 })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: expect.stringContaining('something other than { result: "text" }'),
    });
    await expect(settleWith(subagentKind, step, 'expire')).rejects.toMatchObject({ code: 'REQUEST_EXPIRED' });
    await expect(settleWith(subagentKind, step, 'cancel')).rejects.toMatchObject({ code: 'ABORTED' });
  });
});

describe('awaitRequest', () => {
  it('stores the payload its kind describes, and refuses one it does not before anything is stored', async () => {
    const store = createMemoryRequestStore();
    stores.push(store);
    const bad = { ...step, prompt: 42 } as unknown as typeof step;
    await expect(
      awaitRequest(store, subagentKind, { sessionId: 's1', callId: 'c1', payload: bad, ttlMs: 1000 }),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(await store.list('s1')).toEqual([]);

    const controller = new AbortController();
    const asked = awaitRequest(
      store,
      subagentKind,
      { sessionId: 's1', callId: 'c2', payload: { ...step, phase: 'Read' }, ttlMs: 1000 },
      controller.signal,
    );
    const request = await until(async () => (await store.list('s1', 'pending'))[0]);
    expect(request).toMatchObject({ kind: 'subagent', callId: 'c2', payload: { ...step, phase: 'Read' } });
    controller.abort();
    await expect(asked).rejects.toMatchObject({ code: 'ABORTED' });
    expect((await store.get(request.id))?.state).toBe('cancelled');
  });

  it('a kind defined outside the registry works end to end: the store needs nothing per kind', async () => {
    const question = defineRequestKind({
      name: 'user_question',
      payload: v.object({ question: v.string() }),
      answers: [v.strictObject({ choice: v.string() })],
      wrongAnswer: 'Answer with { "choice" }.',
      settle: (settlement) => (settlement.state === 'answered' ? settlement.answer.choice : undefined),
    });
    expect(await settleWith(question, { question: 'Which?' }, { choice: 'b' })).toBe('b');
  });
});

describe('user_question requests', () => {
  const questions = [
    { id: 'database', question: 'Which database?', options: [{ label: 'SQLite' }, { label: 'PostgreSQL' }] },
    {
      id: 'regions',
      question: 'Which regions?',
      multi_select: true,
      options: [{ label: 'eu' }, { label: 'us' }],
    },
    { id: 'name', question: 'What name?' },
  ];

  it('an answer comes back for every question asked, in order; unanswered ones empty', async () => {
    expect(
      await settleWith(
        userQuestionKind,
        { questions },
        { answers: { regions: ['eu', 'us'], database: 'SQLite' } },
      ),
    ).toEqual({
      answers: [
        { id: 'database', question: 'Which database?', answer: ['SQLite'] },
        { id: 'regions', question: 'Which regions?', answer: ['eu', 'us'] },
        { id: 'name', question: 'What name?', answer: [] },
      ],
    });
  });

  it('expiry fails the call with REQUEST_EXPIRED, cancellation with ABORTED, like a remote tool', async () => {
    await expect(settleWith(userQuestionKind, { questions }, 'expire')).rejects.toMatchObject({
      code: 'REQUEST_EXPIRED',
    });
    await expect(settleWith(userQuestionKind, { questions }, 'cancel')).rejects.toMatchObject({
      code: 'ABORTED',
    });
  });

  it('an approval-shaped answer is refused with what to send', () => {
    expect(() => checkAnswer('user_question', { answers: { database: 'SQLite' } })).not.toThrow();
    expect(() => checkAnswer('user_question', { allow: true })).toThrow(
      expect.objectContaining({ code: 'BAD_REQUEST', message: userQuestionKind.wrongAnswer }),
    );
  });
});

describe('plan_review requests', () => {
  it('approve only on an explicit { allow: true }; every other ending sends the plan back with a reason', async () => {
    const plan = { plan: '1. Do it.' };
    expect(await settleWith(planReviewKind, plan, { allow: true })).toEqual({ approved: true });
    expect(await settleWith(planReviewKind, plan, { allow: false, reason: 'add tests' })).toEqual({
      approved: false,
      feedback: 'add tests',
    });
    expect(await settleWith(planReviewKind, plan, 'expire')).toEqual({
      approved: false,
      feedback: 'nobody reviewed the plan in time',
    });
    expect(await settleWith(planReviewKind, plan, 'cancel')).toMatchObject({ approved: false });
  });
});

describe('the registry', () => {
  it('kinds have distinct names, and the API accepts exactly their answer shapes', () => {
    const names = REQUEST_KINDS.map((kind) => kind.name);
    expect(names).toEqual([
      'approval',
      'remote_tool',
      'subagent',
      'plugin_client_query',
      'user_question',
      'plan_review',
      'reminder',
      'agent_wakeup',
    ]);
    for (const kind of REQUEST_KINDS)
      for (const shape of kind.answers) expect(AnswerBody.options).toContain(shape);
    expect(new Set(AnswerBody.options).size).toBe(AnswerBody.options.length);
  });

  it('an answer that fits another kind is BAD_REQUEST with what to send instead', () => {
    expect(() => checkAnswer('approval', { allow: true })).not.toThrow();
    expect(() => checkAnswer('approval', { result: 1 })).toThrow(
      expect.objectContaining({ code: 'BAD_REQUEST', message: approvalKind.wrongAnswer }),
    );
    expect(() => checkAnswer('subagent', { allow: false })).toThrow(
      expect.objectContaining({ code: 'BAD_REQUEST', message: subagentKind.wrongAnswer }),
    );
    expect(() => checkAnswer('mystery', { result: 1 })).toThrow(
      expect.objectContaining({ code: 'BAD_REQUEST' }),
    );
  });
});
