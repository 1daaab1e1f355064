// followSignal: the timeout policy's signal follows the caller's without AbortSignal.any, and
// runBody sees through the link (follows) so it joins no second composite signal.
import { getEventListeners } from 'node:events';
import { expect, it } from 'vitest';
import { followSignal, follows } from '../../../host/tools/index.ts';

it("aborts the follower with the followed signal's reason, and only once", () => {
  const parent = new AbortController();
  const { controller, release } = followSignal(parent.signal);
  const reasons: unknown[] = [];
  controller.signal.addEventListener('abort', () => reasons.push(controller.signal.reason));
  const why = new Error('gone');
  parent.abort(why);
  expect(controller.signal.aborted).toBe(true);
  expect(reasons).toEqual([why]);
  release();
  release(); // idempotent
});

it('a follower of an aborted signal starts aborted, with its reason', () => {
  const parent = new AbortController();
  parent.abort('before');
  const { controller } = followSignal(parent.signal);
  expect(controller.signal.aborted).toBe(true);
  expect(controller.signal.reason).toBe('before');
});

it('release leaves no listener on the followed signal, and the follower no longer follows aborts', () => {
  const parent = new AbortController();
  const { controller, release } = followSignal(parent.signal);
  expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
  release();
  expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
  parent.abort();
  expect(controller.signal.aborted).toBe(false);
});

it('follows sees through chains of followers, and nothing else', () => {
  const root = new AbortController();
  const a = followSignal(root.signal);
  const b = followSignal(a.controller.signal);
  expect(follows(root.signal, root.signal)).toBe(true);
  expect(follows(b.controller.signal, root.signal)).toBe(true);
  expect(follows(root.signal, b.controller.signal)).toBe(false);
  expect(follows(new AbortController().signal, root.signal)).toBe(false);
  // A composite signal is not a follower: runBody joins the caller's signal in for it.
  expect(follows(AbortSignal.any([root.signal]), root.signal)).toBe(false);
});

it('follows several signals: the first to abort gives its reason, and release removes every listener', () => {
  const [a, b, c] = [new AbortController(), new AbortController(), new AbortController()];
  const f = followSignal(a.signal, b.signal, c.signal);
  expect(follows(f.signal, b.signal)).toBe(true);
  b.abort('b first');
  a.abort('a later');
  expect(f.signal.reason).toBe('b first');
  f.release();
  for (const s of [a.signal, b.signal, c.signal]) expect(getEventListeners(s, 'abort')).toHaveLength(0);
  // One already aborted: the follower starts aborted and holds no listener.
  const g = followSignal(new AbortController().signal, c.signal, b.signal);
  expect(g.signal.reason).toBe('b first');
  expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
});
