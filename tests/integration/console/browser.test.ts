// The console in Debian's Chromium (driven by playwright-core, no browser download) against a real
// service with Docker sandboxes: sign in, open an agent, watch a run_code call and its inner calls
// arrive live, approve its `ask` from the page, see it on the tenant's timeline, browse the files,
// type in an attached terminal.
// Tool output with a <script> shows as text and runs nothing. Screenshots go to
// tests/artifacts/console/ (gitignored), kept for a person to look at.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import { json, served } from '../api/served.ts';

const ARTIFACTS = join(import.meta.dirname, '../../artifacts/console');
const s = served('console');
let server: Running;
let key: string;
let browser: Browser;
let page: Page;

const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  const executablePath = inject('chromium');
  if (executablePath.startsWith('error: ')) throw new Error(executablePath.slice(7));
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await s.current();
  key = (await server.store.tenants.createTenant('console')).apiKey;
  // --no-sandbox: the tests run as root in a container, where Chromium's own sandbox cannot start.
  browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('dialog', (dialog) => void dialog.dismiss());
});

afterAll(async () => {
  await browser?.close();
});

describe('the console in a browser', () => {
  let coder: string;

  it('signs in with a tenant key and lists its agents', async () => {
    coder = (await json(server, key, 'POST', '/v1/agents', { preset: 'code', policy: { ask: ['write'] } }))
      .json.id;
    await page.goto(`${server.url}/console/agents`);
    expect(new URL(page.url()).pathname).toBe('/console/signin');
    await page.fill('input[name=key]', key);
    await page.click('button[type=submit]');
    await page.waitForURL('**/console/agents');
    await expect.poll(() => page.textContent('main')).toContain(coder);
    await shot('1-agents');
  });

  it('watches a run_code call and its inner calls live and approves the ask from the page', async () => {
    await page.click(`a[href="/console/agents/${coder}"]`);
    await page.waitForSelector('#stream-state:text("live")');
    const code = [
      "await tools.write({ file_path: 'hostile.txt', content: '<script>window.__pwned = 1</script>' });",
      "return await tools.read({ file_path: 'hostile.txt' });",
    ].join('\n');
    const call = json(server, key, 'POST', `/v1/agents/${coder}/calls`, {
      calls: [{ id: 'c1', name: 'run_code', arguments: { description: 'console test', code } }],
    });
    // The root call and the inner write arrive live; the write waits for its approval.
    await page.waitForSelector('li.event[data-type="tool.call"][data-call="c1"]');
    await page.waitForSelector('li.event.inner[data-type="tool.call"][data-parent="c1"]');
    const allow = await page.waitForSelector('form.request button[value=allow]');
    await shot('2-approval-pending');
    await allow.click();
    await page.waitForSelector('li.event.root[data-type="tool.result"][data-call="c1"]');
    const done = await call;
    expect(done.json.results[0].ok, JSON.stringify(done.json)).toBe(true);
    // Inner calls: the write (approved) and the read, each with its result, under c1.
    const inner = await page.$$eval('li.event.inner[data-type="tool.call"]', (rows) =>
      rows.map((r) => r.querySelector('.summary')?.textContent ?? ''),
    );
    expect(inner.some((t) => t.startsWith('write('))).toBe(true);
    expect(inner.some((t) => t.startsWith('read('))).toBe(true);
    expect(await page.locator('li.event[data-type="request.answered"]').count()).toBeGreaterThan(0);
    // The tool output's <script> is text on the page and never ran.
    expect(await page.textContent('#events')).toContain('<script>window.__pwned = 1</script>');
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    await page.selectOption('select[name=family]', 'request');
    expect(await page.locator('li.event[data-type="tool.call"]:visible').count()).toBe(0);
    await page.selectOption('select[name=family]', '');
    await shot('3-timeline');
  });

  it("shows the call on the tenant's merged timeline", async () => {
    await page.click('a[href="/console/timeline"]');
    await page.waitForSelector(`li.event[data-agent="${coder}"][data-type="tool.result"][data-call="c1"]`);
    await shot('4-tenant-timeline');
  });

  it('browses the workspace and views a file as text', async () => {
    await page.goto(`${server.url}/console/agents/${coder}/files?path=.`);
    await page.click('a.entry:text("hostile.txt")');
    expect(await page.textContent('pre.file')).toBe('<script>window.__pwned = 1</script>');
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    await shot('5-file');
  });

  it('attaches a terminal, types in it and sees the output', async () => {
    const creator = (await json(server, key, 'POST', '/v1/agents', { preset: 'creator' })).json.id;
    const opened = await json(server, key, 'POST', `/v1/agents/${creator}/calls`, {
      calls: [{ id: 't1', name: 'terminal_open', arguments: { type: 'bash', name: 'console' } }],
    });
    const tid = opened.json.results[0].value.sessionId as string;
    // The agent page offers the terminal its log says it opened.
    await page.goto(`${server.url}/console/agents/${creator}`);
    await page.click(`a.terminal:text("terminal ${tid}")`);
    await page.waitForSelector('#terminal-state:text("attached")');
    await page.click('#terminal');
    await page.keyboard.type('echo console-$((6*7))\n');
    await expect
      .poll(() => page.textContent('#terminal .xterm-rows'), { timeout: 20_000 })
      .toContain('console-42');
    await shot('6-terminal');
  });
});
