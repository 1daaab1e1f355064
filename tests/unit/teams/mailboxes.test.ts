// Mailbox waits (wait_agent): they return at once when mail is there, wake on a post, end empty at
// their timeout, reject when cancelled, and deliver each item to one wait only; the service's own
// notices are cut to the byte limit instead of refused.
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/index.ts';
import { DEFAULT_CHILD_LIMITS } from '../../../host/teams/limits.ts';
import { createMailboxes } from '../../../host/teams/mailboxes.ts';

let store: Store;
afterEach(() => store?.close());

const open = () => {
  store = openStore({ path: ':memory:' });
  return createMailboxes({
    teams: store.teams,
    events: store.events,
    limitsOf: () => ({ ...DEFAULT_CHILD_LIMITS, messageBytes: 300 }),
  });
};
const item = (body: string) => ({
  tenantId: 't',
  agentId: 'agt_to',
  fromId: 'agt_from',
  kind: 'message' as const,
  body,
});
const never = new AbortController().signal;

describe('mailbox waits', () => {
  it('wake on a post, and deliver each item to one wait only', async () => {
    const mail = open();
    const first = mail.wait('agt_to', 60_000, never);
    const second = mail.wait('agt_to', 0, never);
    await mail.post(item('hello'));
    expect((await first).map((m) => m.body)).toEqual(['hello']);
    expect(await second).toEqual([]);
    expect(await mail.wait('agt_to', 0, never)).toEqual([]);
    expect(
      (await store.events.list('agt_to')).map((e) => [e.type, (e.data as { message: string }).message]),
    ).toEqual([['mailbox.message', 'hello']]);
  });

  it('end empty at their timeout and reject when cancelled', async () => {
    const mail = open();
    expect(await mail.wait('agt_to', 5, never)).toEqual([]);
    const controller = new AbortController();
    const cancelled = mail.wait('agt_to', 60_000, controller.signal);
    controller.abort(new Error('call cancelled'));
    await expect(cancelled).rejects.toThrow('call cancelled');
    await mail.post(item('after'));
    expect((await mail.wait('agt_to', 0, never)).map((m) => m.body)).toEqual(['after']);
  });

  it('refuse a message over the byte limit, but cut a notice of the service', async () => {
    const mail = open();
    await expect(mail.post(item('x'.repeat(301)))).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const notice = await mail.post(item('é'.repeat(400)), undefined, { clip: true });
    expect(Buffer.byteLength(notice.body)).toBeLessThanOrEqual(300);
    expect(notice.body).toMatch(/^é+ … \(cut/);
  });
});
