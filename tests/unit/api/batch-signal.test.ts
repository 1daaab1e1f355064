// A call batch's signal (routes/calls.ts batchSignal): it aborts when the client goes away, with the
// request's reason, or at the batch deadline with a TimeoutError; once the batch is done neither
// reaches it any more.
import { describe, expect, it } from 'vitest';
import { batchSignal } from '../../../host/api/routes/calls.ts';
import { until } from '../../helpers/until.ts';

describe('batchSignal', () => {
  it("aborts with the request's reason when the client goes away", () => {
    const request = new AbortController();
    const { signal } = batchSignal(request.signal, 60_000);
    expect(signal.aborted).toBe(false);
    request.abort('client gone');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('client gone');
  });

  it('is aborted from the start for a request already aborted', () => {
    const request = new AbortController();
    request.abort('gone before');
    expect(batchSignal(request.signal, 60_000).signal.reason).toBe('gone before');
  });

  it('aborts with a TimeoutError at the deadline', async () => {
    const { signal } = batchSignal(new AbortController().signal, 20);
    await until(() => signal.aborted);
    expect(signal.reason).toBeInstanceOf(DOMException);
    expect((signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('hears neither the client nor the deadline once done', async () => {
    const request = new AbortController();
    const batch = batchSignal(request.signal, 20);
    batch.done();
    await new Promise((resolve) => setTimeout(resolve, 60));
    request.abort('late');
    expect(batch.signal.aborted).toBe(false);
  });
});
