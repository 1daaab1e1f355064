// HTML to markdown off the event loop: the worker converts, a page that takes too long ends only
// its own job (the worker is replaced), and the queue is bounded.
import { afterEach, describe, expect, it } from 'vitest';
import { htmlToMarkdown } from '../../../host/egress/readable/convert.ts';
import { createReadablePool, type ReadablePool } from '../../../host/egress/readable/pool.ts';

const page = `<html><head><title>T</title></head><body><article><h1>Hi</h1><p>${'word '.repeat(60)}<a href="/x">l</a></p></article></body></html>`;
let pool: ReadablePool | undefined;
afterEach(async () => {
  await pool?.close();
});

describe('readable conversion', () => {
  it('picks out the article, with links made absolute', () => {
    const out = htmlToMarkdown(page, 'http://a.test/dir/');
    expect(out.title).toBe('T');
    expect(out.markdown).toContain('## Hi');
    expect(out.markdown).toContain('[l](http://a.test/x)');
  });

  it('converts a page without an article whole, scripts dropped', () => {
    const out = htmlToMarkdown('<p>short</p><script>x()</script>', 'http://a.test/');
    expect(out.markdown).toBe('short');
  });

  it('runs in a worker; an overrun ends its own job and the worker is replaced', async () => {
    pool = createReadablePool({ timeoutMs: 1 });
    await expect(pool.convert(page, 'http://a.test/')).rejects.toMatchObject({ code: 'TOOL_FAILED' });
    await pool.close();
    pool = createReadablePool({ maxQueued: 1 });
    const jobs = [pool.convert(page, 'http://a.test/'), pool.convert(page, 'http://a.test/')];
    await expect(pool.convert(page, 'http://a.test/')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    for (const job of await Promise.all(jobs)) expect(job.markdown).toContain('## Hi');
  });
});
