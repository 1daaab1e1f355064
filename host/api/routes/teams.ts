// The conversation, children and mailboxes of an agent over HTTP. POST messages appends the
// client's conversation (user and assistant messages) to the agent's session log as `message.*`
// events, which the session tools search and a forked child starts from. GET children lists the
// agent's children, descendants or team as list_agents does; the mailbox routes let a client read
// an agent's messages (GET keeps them unread; POST take delivers them, as wait_agent does).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { jsonBody, jsonRequest, jsonResponse, noOptions, noOptionsRequest, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import {
  AgentSummaries,
  AppendMessages,
  ChildrenQuery,
  ErrorBody,
  Mailbox,
  MailboxQuery,
  MessagesAppended,
} from '../schemas.ts';
import { loadAgent, notFound } from './agents.ts';

export const teamRoutes = (agents: AgentService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/agents/:id/messages',
    describeRoute({
      operationId: 'appendMessages',
      tags: ['session'],
      description:
        "Appends the client's conversation to the agent's session log, in order, as `message.user` and `message.assistant` events (GET events, the session_* tools and subagent_fork see them).",
      requestBody: jsonRequest(AppendMessages),
      responses: {
        201: jsonResponse('The events appended', MessagesAppended),
        400: jsonResponse('Invalid', ErrorBody),
        ...notFound,
      },
    }),
    loadAgent(agents),
    jsonBody(AppendMessages),
    async (c) => {
      const { messages } = c.get('body') as v.InferOutput<typeof AppendMessages>;
      const events = await agents.appendMessages(c.get('agent'), messages);
      return c.json({ events: events.map((e) => ({ seq: e.seq, type: e.type })) }, 201);
    },
  );
  app.get(
    '/v1/agents/:id/children',
    describeRoute({
      operationId: 'listChildren',
      tags: ['teams'],
      description:
        'The agents this agent made: `children` (default), `descendants`, or `team` (its lead and teammates, and its own children), as list_agents shows them.',
      responses: { 200: jsonResponse('The agents', AgentSummaries), ...notFound },
    }),
    loadAgent(agents),
    async (c) => {
      const { scope } = queryOf(ChildrenQuery, c.req.query());
      return c.json({ agents: await agents.teams().list(c.get('agent'), scope ?? 'children') });
    },
  );
  app.get(
    '/v1/agents/:id/mailbox',
    describeRoute({
      operationId: 'getMailbox',
      tags: ['teams'],
      description:
        "The agent's mailbox after message id `after`, read or not (reading here delivers nothing).",
      responses: { 200: jsonResponse('Messages, oldest first', Mailbox), ...notFound },
    }),
    loadAgent(agents),
    async (c) => {
      const { after, limit } = queryOf(MailboxQuery, c.req.query());
      return c.json({ messages: await agents.teams().mailbox(c.get('agent'), after, limit) });
    },
  );
  app.post(
    '/v1/agents/:id/mailbox/take',
    describeRoute({
      operationId: 'takeMailbox',
      tags: ['teams'],
      description:
        "Delivers the agent's unread messages: returned here once, never again (as wait_agent does).",
      requestBody: noOptionsRequest(),
      responses: { 200: jsonResponse('The messages delivered', Mailbox), ...notFound },
    }),
    loadAgent(agents),
    noOptions(),
    async (c) => c.json({ messages: await agents.teams().take(c.get('agent')) }),
  );
  return app;
};
