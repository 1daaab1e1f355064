// The client process of cancel-gc.test.ts, run with --expose-gc: it opens what is to be cancelled,
// forces garbage collections while it is open (the collection that once dropped the abort), then
// cancels it, and prints one line per step so the test sees how far it got. argv[2] is JSON:
// { baseUrl, apiKey, scenario: 'events' | 'onRequest' | 'batch' | 'stream' }.
import { DshClient } from '../../../client/index.ts';

const { baseUrl, apiKey, scenario } = JSON.parse(process.argv[2] ?? '{}') as {
  baseUrl: string;
  apiKey: string;
  scenario: string;
};
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

/** Collections with turns of the event loop between them, as a busy process would have. */
async function collect(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const client = new DshClient({ baseUrl, apiKey, retry: false });
const remoteTools = [
  { name: 'lookup', description: 'Answered by the client', parameters: { type: 'object' } },
];
const agent = await client.agents.create({ preset: 'standard', remoteTools });
console.log(`agent ${agent.id}`);

if (scenario === 'events') {
  await agent.call('write', { file_path: 'a.txt', content: 'a' });
  const controller = new AbortController();
  for await (const event of agent.events({ signal: controller.signal })) {
    console.log(`event ${event.type}`);
    await collect();
    controller.abort();
  }
  console.log('settled events');
} else if (scenario === 'onRequest') {
  const listener = agent.onRequest('remote_tool', () => ({ result: 'found' }));
  // Answered: the listener follows the log now.
  await agent.call('lookup', {});
  console.log('answered');
  await collect();
  await listener.stop();
  console.log('settled onRequest');
} else if (scenario === 'batch' || scenario === 'stream') {
  const controller = new AbortController();
  const options = {
    signal: controller.signal,
    ...(scenario === 'stream' ? { onProgress: () => undefined } : {}),
  };
  const batch = agent.batch([{ name: 'lookup', arguments: {} }], options).then(
    () => 'resolved',
    (error: unknown) => `rejected ${(error as Error).name}`,
  );
  // The call waits for its client's answer, which never comes: the batch runs until cancelled.
  while ((await agent.requests.list('pending')).length === 0) await new Promise((r) => setTimeout(r, 20));
  console.log('pending');
  await collect();
  controller.abort();
  console.log(`settled ${scenario} ${await batch}`);
}
