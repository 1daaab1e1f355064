// Output flowing to a client is activity for idle polling (host/idle-poll.ts, AppDeps.activity):
// each event an SSE stream sends touches it, so the hops that produce a stream's events run with
// idle CPUs polling; an open stream with nothing to send lets them halt once the linger passed.
// Requests themselves are touched by serve-http.ts's listenHttp, which app.request() does not pass.
// Terminal output and keystrokes: tests/unit/api/terminals.test.ts.
import { afterEach, expect, it } from 'vitest';
import { createIdlePoll, NO_CONSTRAINT_US } from '../../../host/idle-poll.ts';
import { recordingDevice } from '../../helpers/cpu-latency.ts';
import { type Api, makeApi } from './harness.ts';
import { readSse } from './sse.ts';

let api: Api | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

it('each event an SSE stream sends keeps idle CPUs polling; an open stream with nothing to send does not', async () => {
  const device = recordingDevice();
  const poll = createIdlePoll({ enabled: true, lingerMs: 5, open: device.open });
  api = await makeApi({}, { app: { activity: () => poll.touch() } });
  const agent = await api.createAgent(api.keyA);
  await api.call(api.keyA, agent.id, [{ id: 'a', name: 'read', arguments: { file_path: 'a' } }]);
  expect(device.writes).toEqual([]); // a JSON answer is not a stream

  const controller = new AbortController();
  const res = await api.app.request(`/v1/agents/${agent.id}/events`, {
    headers: { Authorization: `Bearer ${api.keyA}`, Accept: 'text/event-stream' },
    signal: controller.signal,
  });
  const messages = readSse(res.body as ReadableStream<Uint8Array>, (m) => m.length >= 4);
  // The replay (the call's two events) touched it; then the stream stays open with nothing to send.
  await device.written(0, 0);
  await device.written(NO_CONSTRAINT_US, 0);
  expect(poll.state).toBe('idle');

  // Events of a call made elsewhere flow to the open stream: polling again.
  const mark = device.writes.length;
  await api.call(api.keyA, agent.id, [{ id: 'b', name: 'read', arguments: { file_path: 'a' } }]);
  expect((await messages).map((m) => m.data.callId)).toEqual(['a', 'a', 'b', 'b']);
  await device.written(0, mark);
  controller.abort();
  poll.close();
});
