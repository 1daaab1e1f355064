// The readable worker thread: takes { id, html, url }, answers { id, ok, value | error }. It holds
// no state between jobs; the pool (./pool.ts) bounds its memory, its time per job and its queue,
// and replaces it when a job overruns.
import { parentPort } from 'node:worker_threads';
import { htmlToMarkdown } from './convert.ts';

parentPort?.on('message', (job: { id: number; html: string; url: string }) => {
  try {
    parentPort?.postMessage({ id: job.id, ok: true, value: htmlToMarkdown(job.html, job.url) });
  } catch (error) {
    parentPort?.postMessage({ id: job.id, ok: false, error: String((error as Error)?.message ?? error) });
  }
});
