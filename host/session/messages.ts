// An agent's conversation in its session log. The model loop runs in the client, so the log holds
// the tool calls and results the service ran and, when the client appends them, the model's
// messages: `message.user` and `message.assistant` events (surface `current`), searchable with the
// session tools and copied into a forked child's log. Invariants: the service never invents or
// changes a message; a fork copies events as they were, marking where each came from.
import type { JsonValue } from '../json.ts';
import type { EventLog, SessionEvent, SessionEventInput } from '../store/types.ts';

/** The roles a client may append. */
export const MESSAGE_ROLES = ['user', 'assistant'] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

/** One message as the client sends it: text, or text parts. */
export interface ConversationMessage {
  role: MessageRole;
  content: string | { type: 'text'; text: string }[];
}

const PREFIX = 'message.';

export const isMessageEvent = (event: { type: string }): boolean => event.type.startsWith(PREFIX);

/** The log events of `messages`, in order. */
export function messageEvents(
  sessionId: string,
  messages: readonly ConversationMessage[],
): SessionEventInput[] {
  return messages.map((message) => ({
    sessionId,
    type: `${PREFIX}${message.role}`,
    surface: 'current',
    data: { role: message.role, content: message.content as JsonValue },
  }));
}

/** The newest `max` message events of a session, oldest first. */
export async function conversationOf(
  events: Pick<EventLog, 'list'>,
  sessionId: string,
  max: number,
): Promise<SessionEvent[]> {
  const found: SessionEvent[] = [];
  let after = 0;
  for (;;) {
    const page = await events.list(sessionId, { afterSeq: after, limit: 5000 });
    if (page.length === 0) break;
    for (const event of page) if (isMessageEvent(event)) found.push(event);
    if (found.length > max * 2) found.splice(0, found.length - max);
    after = (page.at(-1) as SessionEvent).seq;
  }
  return found.slice(-max);
}

/** Copies the parent's conversation (its newest `max` messages) into the child's log; resolves to how many. */
export async function forkConversation(
  events: Pick<EventLog, 'list' | 'append'>,
  from: string,
  to: string,
  max: number,
): Promise<number> {
  const copied = (await conversationOf(events, from, max)).map(
    (event): SessionEventInput => ({
      sessionId: to,
      type: event.type,
      surface: 'current',
      data: {
        ...(event.data as { [key: string]: JsonValue }),
        forkedFrom: { sessionId: from, seq: event.seq },
      },
    }),
  );
  for (let i = 0; i < copied.length; i += 500) await events.append(copied.slice(i, i + 500));
  return copied.length;
}
