// The resumable answers of the MCP endpoint (host/api/mcp/resume.ts) on their own: ids in order
// after the priming event, the answer read on after its reader went, a resume only by the stream's
// owner and only from an event still kept (a stream keeps at most 8 MiB of events).
import { describe, expect, it } from 'vitest';
import { createResumableStreams } from '../../../host/api/mcp/resume.ts';

const encoder = new TextEncoder();

/** An SSE answer whose events the test pushes one by one. */
const source = () => {
  let control!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      control = controller;
    },
  });
  return {
    response: new Response(body, { headers: { 'Content-Type': 'text/event-stream' } }),
    event: (data: string) => control.enqueue(encoder.encode(`event: message\ndata: ${data}\n\n`)),
    end: () => control.close(),
  };
};

const ids = (text: string) => [...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1] ?? '');
/** Records one short finished answer of `owner` in `streams`: its first event id. */
const finishedIn =
  (streams: ReturnType<typeof createResumableStreams>) => async (owner: string, tenant: string) => {
    const answer = source();
    const recorded = streams.record(owner, answer.response, { tenant, priming: true });
    answer.event('{}');
    answer.end();
    return ids(await recorded.text())[0] ?? '';
  };
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('resumable MCP answers', () => {
  it('numbers the events after a priming event and replays what came after a reader went', async () => {
    const streams = createResumableStreams();
    const answer = source();
    let ended = 0;
    const recorded = streams.record('t/a', answer.response, {
      tenant: 't',
      priming: true,
      onEnd: () => ended++,
    });
    const reader = (recorded.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const [priming = ''] = ids(first);
    expect(priming).toMatch(/^[0-9a-f-]{36}_0$/);
    expect(first).toContain('retry: ');
    answer.event('"one"');
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('data: "one"');
    await reader.cancel(); // the connection drops
    // The answer is not over for that: what holds a place for it keeps holding it.
    await settle();
    expect(ended).toBe(0);
    answer.event('"two"');
    answer.event('"three"');
    answer.end();
    await settle();
    expect(ended).toBe(1);

    const stream = priming.slice(0, -2);
    // Only the owner, only a well-formed id of a stream it has.
    expect(streams.resume('t/other', priming)).toBeUndefined();
    expect(streams.resume('t/a', `${stream}_x`)).toBeUndefined();
    expect(streams.resume('t/a', 'not-an-id')).toBeUndefined();
    const resumed = await (streams.resume('t/a', `${stream}_1`) as Response).text();
    expect(ids(resumed)).toEqual([`${stream}_2`, `${stream}_3`]);
    expect(resumed).toContain('data: "three"');
    expect(await (streams.resume('t/a', `${stream}_3`) as Response).text()).toBe('');
  });

  it('before 2025-11-25 there is no priming event; every event still has an id', async () => {
    const streams = createResumableStreams();
    const answer = source();
    const recorded = streams.record('t/a', answer.response, { tenant: 't', priming: false });
    answer.event('{}');
    answer.end();
    const text = await recorded.text();
    expect(ids(text)).toHaveLength(1);
    expect(ids(text)[0]).toMatch(/_1$/);
  });

  it('keeps at most 8 MiB of one stream: resuming before what it dropped is unknown', async () => {
    const streams = createResumableStreams();
    const answer = source();
    const recorded = streams.record('t/a', answer.response, { tenant: 't', priming: true });
    const big = `"${'x'.repeat(3 * 1024 * 1024)}"`;
    for (let i = 0; i < 4; i++) answer.event(big);
    answer.end();
    const text = await recorded.text();
    const [priming = ''] = ids(text);
    const stream = priming.slice(0, -2);
    expect(ids(text)).toHaveLength(5);
    expect(streams.resume('t/a', priming)).toBeUndefined();
    expect(streams.resume('t/a', `${stream}_1`)).toBeUndefined();
    const resumed = await (streams.resume('t/a', `${stream}_2`) as Response).text();
    expect(ids(resumed)).toEqual([`${stream}_3`, `${stream}_4`]);
  });

  it("keeps a tenant's share: its flood of short answers drops its own oldest, never another tenant's", async () => {
    const streams = createResumableStreams();
    const finished = finishedIn(streams);
    const kept = await finished('a/x', 'a');
    const flood: string[] = [];
    for (let i = 0; i < 600; i++) flood.push(await finished('b/y', 'b'));
    expect(streams.resume('a/x', kept)).toBeDefined();
    expect(streams.resume('b/y', flood[0] ?? '')).toBeUndefined();
    expect(streams.resume('b/y', flood.at(-1) ?? '')).toBeDefined();
    expect(streams.size()).toBe(1 + 64);
  });

  it("keeps a quiet tenant's answer while several tenants, each within its share, fill the whole", async () => {
    // Round 5 found: past 512 kept streams in all, the oldest finished one went whoever held it, so
    // eight tenants of 64 short answers each pushed out the answer of a ninth that kept just one.
    const streams = createResumableStreams();
    const finished = finishedIn(streams);
    const kept = await finished('quiet/x', 'quiet');
    for (let t = 0; t < 9; t++) for (let i = 0; i < 64; i++) await finished(`t${t}/y`, `t${t}`);
    expect(streams.resume('quiet/x', kept)).toBeDefined();
    expect(streams.size()).toBe(512);
  });
});
