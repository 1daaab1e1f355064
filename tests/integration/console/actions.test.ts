// The console's actions in Debian's Chromium against a real service with Docker sandboxes: the
// styled sign-in page and the icon; create an agent from the form and watch its usage refresh;
// run a command and a tool call; upload and delete a file; open a terminal with a button, where
// 256-colour and truecolor output and the cursor draw with no CSP violation, and close it; answer
// a remote tool's request with a result; delete the agent. As the operator: create a tenant (its
// key shown once), issue and revoke a key, see the tenant's agents. Screenshots go to
// tests/artifacts/console/ (gitignored), kept for a person to look at.
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import { json, served } from '../api/served.ts';

const ARTIFACTS = join(import.meta.dirname, '../../artifacts/console');
const ADMIN = 'console-actions-admin-key-0123456789';
const s = served('console-actions', { adminKey: ADMIN });
let server: Running;
let key: string;
let browser: Browser;
let page: Page;
/** Every CSP violation the pages reported, as Chromium logs it. */
const violations: string[] = [];

const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  const executablePath = inject('chromium');
  if (executablePath.startsWith('error: ')) throw new Error(executablePath.slice(7));
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await s.current();
  key = (await server.store.tenants.createTenant('console-actions')).apiKey;
  // --no-sandbox: the tests run as root in a container, where Chromium's own sandbox cannot start.
  browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('console', (m) => {
    if (m.text().includes('Content Security Policy')) violations.push(m.text());
  });
});

afterAll(async () => {
  await browser?.close();
});

describe('console actions in a browser', () => {
  let id: string;

  it('shows a styled sign-in page with the icon, and signs in', async () => {
    await page.goto(`${server.url}/console/signin`);
    // In the page (the tests' TypeScript has no DOM types, so the page's code is a string).
    const card = await page.evaluate<{ background: string; border: string }>(`(() => {
      const main = getComputedStyle(document.querySelector('main'));
      return { background: main.backgroundColor, border: main.borderTopStyle };
    })()`);
    expect(card).toEqual({ background: 'rgb(255, 255, 255)', border: 'solid' });
    const icon = await page.request.get(`${server.url}/favicon.ico`);
    expect([icon.status(), icon.headers()['content-type']]).toEqual([200, 'image/x-icon']);
    await shot('a1-signin');
    await page.fill('input[name=key]', key);
    await page.click('button[type=submit]');
    await page.waitForURL('**/console/agents');
  });

  it('creates an agent from the form with a preset, a mode and limits', async () => {
    await page.selectOption('#create-agent select[name=preset]', 'creator');
    await page.selectOption('#create-agent select[name=mode]', 'native');
    await page.fill('#create-agent input[name=memoryMb]', '256');
    await page.fill('#create-agent input[name=diskMb]', '64');
    await page.click('#create-agent button[type=submit]');
    await page.waitForURL(/\/console\/agents\/[^/]+$/);
    id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop() as string);
    const agent = await json(server, key, 'GET', `/v1/agents/${id}`);
    expect(agent.json).toMatchObject({
      preset: 'creator',
      mode: 'native',
      config: { sandbox: { memoryMb: 256 } },
    });
  });

  it('runs a command and a tool call and shows what came back', async () => {
    await page.click('#run-link');
    await page.fill('#exec input[name=command]', 'echo run-$((6*7)); echo oops >&2; exit 3');
    await page.click('#exec button[type=submit]');
    await page.waitForSelector('#result[data-exit="3"]');
    expect(await page.textContent('#result pre.stdout')).toBe('run-42\n');
    expect(await page.textContent('#result pre.stderr')).toBe('oops\n');
    // The duration reads as people read it: "845 ms", "12.3 ms", "1.2 s".
    expect(await page.textContent('#result td:nth-child(2)')).toMatch(/^\d+(\.\d+)? m?s$/);
    await page.selectOption('#call select[name=name]', 'write');
    await page.fill(
      '#call textarea[name=arguments]',
      '{"file_path":"made.txt","content":"<b>from the console</b>"}',
    );
    await page.click('#call button[type=submit]');
    await page.waitForSelector('#result[data-ok="true"]');
    await shot('a2-run');
  });

  it('refreshes the state and usage on the agent page in readable units', async () => {
    await page.goto(`${server.url}/console/agents/${id}`);
    await page.waitForSelector('#usage[data-refreshed]', { timeout: 20_000 });
    expect(await page.textContent('#usage td[data-usage="state"]')).toMatch(/^ready/);
    expect(await page.textContent('#usage td[data-usage="calls"]')).toBe('1');
    // Disk and memory in binary units of the limit, never raw bytes.
    expect(await page.textContent('#usage td[data-usage="disk"]')).toMatch(
      / (B|KiB|MiB) of 64 MiB \(\d+%\)$/,
    );
    expect(await page.textContent('#usage td[data-usage="memory"]')).toMatch(
      /^(\d+(\.\d+)? (KiB|MiB) of 256 MiB \(\d+%\)|not measured)$/,
    );
    await shot('a3-agent');
  });

  it('uploads a file into the workspace and deletes it', async () => {
    const local = join(tmpdir(), `console-upload-${process.pid}.txt`);
    writeFileSync(local, 'uploaded from a browser\n');
    await page.click('#files-link');
    await page.setInputFiles('#upload input[type=file]', local);
    await page.click('#upload button[type=submit]');
    await page.waitForSelector(`tr[data-entry="console-upload-${process.pid}.txt"]`);
    const read = await fetch(`${server.url}/v1/agents/${id}/files?path=console-upload-${process.pid}.txt`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(await read.text()).toBe('uploaded from a browser\n');
    await page.click('tr[data-entry="made.txt"] button.danger');
    await page.waitForSelector('tr[data-entry="made.txt"]', { state: 'detached' });
    await shot('a4-files');
  });

  it('opens a terminal with a button, draws 256-colour and truecolor output and the cursor, and closes it', async () => {
    await page.goto(`${server.url}/console/agents/${id}/terminals`);
    await page.fill('#open-terminal input[name=name]', 'from-console');
    await page.click('#open-terminal button[type=submit]');
    await page.waitForSelector('#terminal-state:text("attached")');
    await page.click('#terminal');
    await page.keyboard.type("printf '\\e[38;5;196mred256\\e[0m \\e[38;2;0;128;255mtruecolor\\e[0m\\n'\n");
    // The output's cells (the typed line echoes the same words inside one longer cell).
    const drawnNow = () =>
      page.evaluate<{ red: string; truecolor: string; cursor: string }>(`(() => {
        const spans = [...document.querySelectorAll('#terminal .xterm-rows span')];
        const colour = (text) => {
          const span = spans.find((s) => s.textContent === text);
          return span === undefined ? 'missing' : getComputedStyle(span).color;
        };
        const cursor = document.querySelector('#terminal .xterm-cursor');
        return {
          red: colour('red256'),
          truecolor: colour('truecolor'),
          cursor: cursor === null ? 'missing' : getComputedStyle(cursor).backgroundColor,
        };
      })()`);
    await expect.poll(async () => (await drawnNow()).truecolor, { timeout: 20_000 }).not.toBe('missing');
    const drawn = await drawnNow();
    expect(drawn.red).toBe('rgb(255, 0, 0)');
    expect(drawn.truecolor).toBe('rgb(0, 128, 255)');
    expect(drawn.cursor).not.toBe('missing');
    expect(drawn.cursor).not.toBe('rgba(0, 0, 0, 0)');
    expect(violations).toEqual([]);
    await shot('a5-terminal');
    await page.goto(`${server.url}/console/agents/${id}/terminals`);
    const row = page.locator('tr[data-terminal]', { hasText: 'from-console' });
    await row.locator('a.attach').waitFor();
    await row.locator('button.danger').click();
    await page.waitForSelector('#no-terminals');
  });

  it("answers a remote tool's request with a result from the agent page", async () => {
    await json(server, key, 'POST', `/v1/agents/${id}/remote-tools`, {
      tools: [{ name: 'lookup', description: 'answered by a person', parameters: { type: 'object' } }],
    });
    await page.goto(`${server.url}/console/agents/${id}`);
    await page.waitForSelector('#stream-state:text("live")');
    const call = json(server, key, 'POST', `/v1/agents/${id}/calls`, {
      calls: [{ id: 'r1', name: 'lookup', arguments: { q: 'the answer' } }],
    });
    // The request arrives live; its form says what it asks.
    const form = page.locator('form.request[data-request]');
    await form.waitFor();
    expect(await form.locator('pre').first().textContent()).toBe('lookup({"q":"the answer"})');
    await form.locator('textarea[name=result]').fill('{"answer": 42}');
    await form.locator('button[value=result]').click();
    const done = await call;
    expect(done.json.results[0]).toMatchObject({ ok: true, value: { answer: 42 } });
  });

  it('deletes the agent from its page, once the box is ticked', async () => {
    await page.goto(`${server.url}/console/agents/${id}`);
    await page.check('#delete-agent input[name=confirm]');
    await page.click('#delete-agent button[type=submit]');
    await page.waitForURL('**/console/agents');
    expect((await json(server, key, 'GET', `/v1/agents/${id}`)).status).toBe(404);
    expect(violations).toEqual([]);
  });
});

describe('operator actions in a browser', () => {
  it("creates a tenant, issues and revokes a key, and sees the tenant's agents", async () => {
    const operator = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await operator.goto(`${server.url}/console/signin`);
    await operator.fill('input[name=key]', ADMIN);
    await operator.check('input[name=role][value=operator]');
    await operator.click('button[type=submit]');
    await operator.waitForURL('**/console/operator');
    await operator.fill('#create-tenant input[name=name]', 'from the console');
    await operator.click('#create-tenant button[type=submit]');
    const first = (await operator.textContent('#new-key .secret')) as string;
    // The key works: the tenant makes an agent with it, which its page then lists.
    const agent = await json(server, first, 'POST', '/v1/agents', {});
    const wrote = await json(server, first, 'POST', `/v1/agents/${agent.json.id}/calls`, {
      calls: [{ id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } }],
    });
    expect(wrote.json.results[0].ok, JSON.stringify(wrote.json)).toBe(true);
    await operator.goto(`${server.url}/console/operator`);
    await operator.locator('tr[data-tenant]', { hasText: 'from the console' }).locator('a').click();
    await operator.waitForSelector(`tr[data-agent="${agent.json.id}"]`);
    await operator.fill('#issue-key input[name=name]', 'ci');
    await operator.fill('#issue-key input[name=days]', '7');
    await operator.click('#issue-key button[type=submit]');
    const second = (await operator.textContent('#new-key .secret')) as string;
    expect((await json(server, second, 'GET', '/v1/agents')).status).toBe(200);
    await operator.locator('tr[data-key]', { hasText: 'ci' }).locator('button.danger').click();
    await operator.locator('tr[data-key]', { hasText: 'revoked' }).waitFor();
    expect((await json(server, second, 'GET', '/v1/agents')).status).toBe(401);
    expect((await json(server, first, 'GET', '/v1/agents')).status).toBe(200);
    await operator.screenshot({ path: join(ARTIFACTS, 'a6-operator-tenant.png'), fullPage: true });
    expect(violations).toEqual([]);
    await operator.close();
  });
});
