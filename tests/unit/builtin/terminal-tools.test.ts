// The persistent `bash` of the minimal preset and the creator's terminal_* tools, through the
// registry's pipeline, against a local sandboxd's terminals (the memory provider has none).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import {
  createPersistentBashTool,
  strReplaceEditorTool,
  terminalTools,
} from '../../../host/tools/builtin/index.ts';
import { cleanTerminalText } from '../../../host/tools/builtin/terminal-text.ts';
import { createRegistry, type ToolResult, type ToolScope } from '../../../host/tools/index.ts';
import { until } from '../../helpers/until.ts';
import { type LocalSandboxd, startLocalSandboxd } from '../sandboxd/harness.ts';
import { standardSandboxTools } from './standard-tools.ts';

let sd: LocalSandboxd;
let client: SandboxdClient;
let sandbox: Sandbox;
let minimal: ToolScope;
let creator: ToolScope;

const callIn = async (scope: ToolScope, name: string, args: Record<string, unknown>): Promise<ToolResult> => {
  const [result] = await scope.execute([{ id: 'c1', name, arguments: args }], {
    agent: { id: 'agent-1', sessionId: 'session-1', services: { sandbox } },
    log: null,
  });
  return result!;
};
const text = (r: ToolResult): string => r.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
const bash = (command: string) => callIn(minimal, 'bash', { command });

beforeAll(async () => {
  sd = await startLocalSandboxd();
  client = await sd.connect();
  sandbox = {
    id: 'local',
    agentId: 'agent-1',
    fs: client.fs,
    jobs: client.jobs,
    terminals: client.terminals,
    archive: {} as Sandbox['archive'],
    exec: client.exec,
    detach: async () => {},
  };
  const registry = createRegistry();
  for (const tool of [...standardSandboxTools(), strReplaceEditorTool, ...terminalTools()])
    registry.global.register(tool);
  const presetMinimal = registry.scope('minimal');
  presetMinimal.restrict({ allow: ['bash', 'str_replace_editor'] });
  presetMinimal.register(createPersistentBashTool({ timeoutMs: 1500 }));
  presetMinimal.register(strReplaceEditorTool);
  minimal = presetMinimal.child('agent');
  creator = registry.scope('creator').child('agent');
});
afterAll(async () => {
  client?.close();
  await sd?.stop();
});

describe('minimal bash: one persistent PTY shell', () => {
  it('keeps the working directory and variables between calls', async () => {
    expect(text(await bash('cd /tmp'))).toBe('(no output)');
    const pwd = await bash('pwd');
    expect(pwd.ok).toBe(true);
    expect(text(pwd)).toBe('/tmp');
    await bash('export GREETING=hello; shout() { echo "$' + '{1^^}!"; }');
    expect(text(await bash('echo "$GREETING"; shout "$GREETING"'))).toBe('hello\nHELLO!');
    expect((await bash('printf "a\\nb\\n"')).value).toMatchObject({ output: 'a\nb\n', exitCode: 0 });
  });

  it('reports exit codes and merges stderr, and takes multi-line and long commands', async () => {
    const r = await bash('echo out; echo err >&2; false');
    expect(text(r)).toBe('out\nerr\nExit code: 1');
    expect(r.value).toMatchObject({ exitCode: 1, timedOut: false });
    expect((await bash('(exit 42)')).value).toMatchObject({ exitCode: 42 });
    const multi = await bash("cat <<'X'\nline one\n  'quoted' $NOT_EXPANDED\nX");
    expect(text(multi)).toBe("line one\n  'quoted' $NOT_EXPANDED");
    const long = `echo ${'y'.repeat(20_000)} | wc -c`;
    expect(text(await bash(long))).toBe('20001');
    // stdin is empty: a command that reads input does not hang
    expect(text(await bash('cat; echo done'))).toBe('done');
  });

  it('interrupts a command at the timeout and the shell stays usable', async () => {
    // Not interrupted, the call would last the sleep's 30 s, past the test's own timeout.
    const r = await bash('cd /; echo started; sleep 30; echo never');
    expect(r.ok).toBe(true);
    expect(r.value).toMatchObject({ timedOut: true, interrupted: true, exitCode: null });
    expect(text(r)).toContain('started');
    expect(text(r)).not.toContain('never');
    expect(text(r)).toContain('timed out after 1.5 s and was interrupted (SIGINT)');
    expect(text(await bash('pwd'))).toBe('/');
  });

  it('starts a new shell after `exit`, and says so', async () => {
    const r = await bash('exit 3');
    expect(r.value).toMatchObject({ shellExited: true });
    expect(text(r)).toContain('the shell exited');
    const next = await bash('echo fresh');
    expect(text(next)).toBe('[the previous shell had ended; this ran in a new shell]\nfresh');
  });

  it('is the only bash the minimal agent sees', async () => {
    const names = minimal.schemas().map((s) => s.name);
    expect(names).toEqual(['bash', 'str_replace_editor']);
    expect(Object.keys(minimal.get('bash')?.parameters.properties ?? {})).toEqual(['command']);
  });
});

describe('terminal_* tools', () => {
  it('open, send, read, signal, list and close a terminal', async () => {
    const opened = await callIn(creator, 'terminal_open', { type: 'bash', name: 'dev', cwd: '.' });
    expect(opened.ok).toBe(true);
    const id = (opened.value as { sessionId: string }).sessionId;
    expect(id).toMatch(/^terminal-/);
    const sent = await callIn(creator, 'terminal_send', {
      sessionId: id,
      text: 'echo sum=$((20+22))',
      submit: true,
    });
    // send waits for the output to go quiet; a slow shell start (a heavy ~/.bashrc) may need a read too
    let seen = text(sent);
    for (let i = 0; i < 40 && !seen.includes('sum=42'); i++) {
      await new Promise((r) => setTimeout(r, 250));
      seen += text(await callIn(creator, 'terminal_read', { sessionId: id }));
    }
    expect(seen).toContain('sum=42');
    const bg = await callIn(creator, 'terminal_send', {
      sessionId: id,
      text: 'sleep 30; echo slept',
      submit: true,
      run_in_background: true,
    });
    expect(text(bg)).toMatch(/^Sent to terminal-/);
    await until(
      async () =>
        text(await callIn(creator, 'terminal_list', {})).includes(`${id} (dev)  bash  running a command`),
      { what: 'the terminal to be running the command' },
    );
    expect((await callIn(creator, 'terminal_signal', { sessionId: id, signal: 'SIGINT' })).ok).toBe(true);
    await callIn(creator, 'terminal_send', { sessionId: id, text: 'echo back=$((1+1))', submit: true });
    const all = await callIn(creator, 'terminal_read', { sessionId: id, offset: 0 });
    expect(text(all)).toContain('back=2');
    expect(text(all)).not.toContain('\nslept');
    const closed = await callIn(creator, 'terminal_close', { sessionId: id });
    expect(text(closed)).toBe(`Closed terminal ${id}`);
    const gone = await callIn(creator, 'terminal_read', { sessionId: id });
    expect(gone.ok).toBe(false);
    expect(gone.error?.code).toBe('TERMINAL_NOT_FOUND');
    const bad = await callIn(creator, 'terminal_open', { type: 'zsh' });
    expect(text(bad)).toMatch(/^Error: Unknown terminal type "zsh"/);
  });

  it('catalog names and arguments', () => {
    const schemas = Object.fromEntries(
      terminalTools().map((t) => [t.name, Object.keys(t.parameters.properties ?? {})]),
    );
    expect(schemas).toEqual({
      terminal_list: [],
      terminal_open: ['type', 'name', 'cwd'],
      terminal_read: ['sessionId', 'offset', 'count'],
      terminal_send: ['sessionId', 'text', 'submit', 'run_in_background'],
      terminal_signal: ['sessionId', 'signal'],
      terminal_close: ['sessionId'],
    });
  });

  it('terminal text: escapes gone, carriage returns resolved', () => {
    expect(cleanTerminalText('\u001b[1;32mok\u001b[0m\r\n10%\r50%\r100%\r\n\u001b]0;title\u0007done')).toBe(
      'ok\n100%\ndone',
    );
  });
});
