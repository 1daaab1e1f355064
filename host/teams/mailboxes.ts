// Mailboxes: every agent's durable queue of messages from other agents (store: host/store/teams.ts),
// and the in-process waits on them (wait_agent). Posting stores the item first (the mailbox is the
// truth), then logs a `mailbox.message` event on the recipient's session (its timeline and its
// client's event stream) and wakes its waiters. The store is asynchronous; a wait reads again
// instead of sleeping when anything was posted during its read. Invariants: a message over its tenant's byte limit
// or to a full mailbox is refused before anything is stored; a wait takes (delivers) what it
// returns, so two waits never return the same item; a wait ends by its timeout or its signal.
// Reports (a child's report, the service's notice that a child finished) are never crowded out by
// messages: messages and followups fill the mailbox's own room (mailboxSize), while each sender's
// reports have a room of their own (REPORTS_PER_SENDER unread), so a teammate that floods the lead
// with messages cannot make another teammate's report disappear, and the reports a mailbox holds
// are bounded by the recipient's children times that room.
// Across processes sharing the store (replicas): the store announces a post as a `mail` wake-up with
// the recipient's id (TeamStore.post, on the store's wake-up bus; PostgreSQL within the post's own
// transaction), and every process wakes its own waits on that mailbox when it hears one; when the
// bus resyncs (it may have missed some) every wait reads again.
import { SandboxError } from '../errors.ts';
import type { EventLog, MailItem, NewMailItem, TeamStore, WakeBus } from '../store/index.ts';
import type { ChildLimits } from './limits.ts';

/** Unread reports one sender may leave in one mailbox (apart from the mailbox's messages). */
export const REPORTS_PER_SENDER = 16;

export interface Mailboxes {
  /**
   * Queues an item for `item.agentId`; PAYLOAD_TOO_LARGE or MAILBOX_FULL (its room is full: the
   * mailbox's for messages, its sender's own for reports) refuse it. With `clip`
   * (the service's own notices) a body over the byte limit is cut instead of refused.
   */
  post(item: NewMailItem, fromName?: string, options?: { clip?: boolean }): Promise<MailItem>;
  /** The recipient's undelivered items, now marked delivered. */
  take(agentId: string): Promise<MailItem[]>;
  /**
   * Takes the recipient's undelivered items, waiting up to `timeoutMs` for one to arrive; resolves
   * to [] at the timeout. Rejects when `signal` aborts.
   */
  wait(agentId: string, timeoutMs: number, signal: AbortSignal): Promise<MailItem[]>;
  /** Wakes the recipient's waits without an item (its team made progress another way). */
  notify(agentId: string): void;
  /** Ends every wait (the service is closing): they resolve with what they have. */
  close(): void;
}

export interface MailboxesOptions {
  teams: TeamStore;
  events: Pick<EventLog, 'append'>;
  limitsOf(tenantId: string): ChildLimits;
  /** Where other processes' posts are heard (the store's bus; `teams` announces them). Default: this process only. */
  wake?: Pick<WakeBus, 'subscribe' | 'onResync'>;
}

/** `run`, with the calls for one key run one after the other (each after the last settled). */
function queuedPerKey<T>(run: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return (key) => {
    const mine = (tails.get(key) ?? Promise.resolve()).then(() => run(key));
    const tail = mine.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return mine;
  };
}

/**
 * Wakes the waits on a mailbox another process posted to, and every wait after a resync; a post
 * made here woke its waits already, and hearing it again only bumps `notices` (one more read at
 * most). Returns the unsubscribe.
 */
function hearOtherProcesses(
  wake: MailboxesOptions['wake'],
  notify: (agentId: string) => void,
  waited: () => string[],
): () => void {
  const offs = [
    wake?.subscribe('mail', notify),
    wake?.onResync(() => {
      for (const agentId of waited()) notify(agentId);
    }),
  ];
  return () => {
    for (const off of offs) off?.();
  };
}

export function createMailboxes(options: MailboxesOptions): Mailboxes {
  const { teams, events } = options;
  const waiters = new Map<string, Set<() => void>>();
  /**
   * Bumped by every notify: a wait that read an empty mailbox sleeps only if nothing was posted
   * while its read was in flight (else it reads again), so no post slips between read and sleep.
   */
  let notices = 0;

  function notify(agentId: string): void {
    notices++;
    for (const wake of waiters.get(agentId) ?? []) wake();
  }
  const unsubscribe = hearOtherProcesses(options.wake, notify, () => [...waiters.keys()]);

  async function post(item: NewMailItem, fromName?: string, how: { clip?: boolean } = {}): Promise<MailItem> {
    const limits = options.limitsOf(item.tenantId);
    const bytes = Buffer.byteLength(item.body);
    if (bytes > limits.messageBytes && how.clip === true) {
      const cut = ' … (cut: the whole text is in the event log)';
      const kept = Buffer.from(item.body).subarray(0, Math.max(0, limits.messageBytes - cut.length - 4));
      // A cut inside a UTF-8 sequence decodes to U+FFFD; drop it.
      return post({ ...item, body: `${kept.toString('utf8').replace(/\uFFFD$/u, '')}${cut}` }, fromName);
    }
    if (bytes > limits.messageBytes)
      throw new SandboxError(
        'PAYLOAD_TOO_LARGE',
        `The message is ${bytes} bytes; this tenant's most is ${limits.messageBytes}. Shorten it, or write it to a file and send its path.`,
        { data: { bytes, max: limits.messageBytes } },
      );
    const stored = await teams.post(item, item.kind === 'report' ? REPORTS_PER_SENDER : limits.mailboxSize);
    events
      .append([
        {
          sessionId: item.agentId,
          type: 'mailbox.message',
          surface: 'log-only',
          data: {
            id: stored.id,
            from: item.fromId,
            ...(fromName === undefined ? {} : { fromName }),
            kind: item.kind,
            message: item.body,
          },
        },
      ])
      .catch(() => {
        // The mailbox holds the message; a log over its budget only misses the timeline entry.
      });
    notify(item.agentId);
    return stored;
  }

  /** Read and deliver are two store calls: queued per recipient, so two takes never share an item. */
  const take = queuedPerKey(async (agentId: string): Promise<MailItem[]> => {
    const items = await teams.undelivered(agentId);
    const last = items.at(-1);
    if (last !== undefined) await teams.deliver(agentId, last.id);
    return items;
  });

  async function wait(agentId: string, timeoutMs: number, signal: AbortSignal): Promise<MailItem[]> {
    for (;;) {
      signal.throwIfAborted();
      const seen = notices;
      const items = await take(agentId);
      if (items.length > 0 || timeoutMs <= 0) return items;
      if (notices !== seen) continue; // something was posted while the read was in flight
      signal.throwIfAborted(); // aborted while the read was in flight: no listener would see it now
      const started = Date.now();
      const woken = await sleepUntilWoken(agentId, timeoutMs, signal);
      timeoutMs -= Date.now() - started;
      if (!woken) return take(agentId);
    }
  }

  /** Ends every wait in progress (close()): each resolves as at its timeout. */
  const closers = new Set<() => void>();

  /** True when woken by a post or notify, false at the timeout or close(); rejects on abort. */
  function sleepUntilWoken(agentId: string, ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const set = waiters.get(agentId) ?? new Set<() => void>();
      waiters.set(agentId, set);
      const settle = (outcome: boolean | Error) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        set.delete(wake);
        closers.delete(end);
        if (set.size === 0 && waiters.get(agentId) === set) waiters.delete(agentId);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const wake = () => settle(true);
      const end = () => settle(false);
      const onAbort = () =>
        settle(
          signal.reason instanceof Error
            ? signal.reason
            : new SandboxError('ABORTED', 'The wait was cancelled.'),
        );
      const timer = setTimeout(end, ms);
      set.add(wake);
      closers.add(end);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  function close(): void {
    unsubscribe();
    for (const end of [...closers]) end();
  }

  return { post, take, wait, notify, close };
}
