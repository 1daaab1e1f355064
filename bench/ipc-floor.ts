// The floor under a brokered call, measured in the bench's own run: a small JSON message to a child
// Node process and back over the same kind of IPC channel the isolate workers use (two process
// wake-ups and Node's IPC framing, nothing else).
import { spawn } from 'node:child_process';

/** Median round trip in ms over `n` sequential messages (the first tenth dropped as warm-up). */
export async function ipcRoundTrip(n: number): Promise<number> {
  const child = spawn(process.execPath, ['-e', "process.on('message', (m) => process.send(m))"], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    serialization: 'json',
  });
  const samples: number[] = [];
  await new Promise<void>((resolve) => {
    let sent = 0;
    let at = 0;
    const next = () => {
      at = performance.now();
      child.send({ t: 'result', id: 1, callId: ++sent, envelope: '{"ok":true,"value":null}' });
    };
    child.on('message', () => {
      samples.push(performance.now() - at);
      if (samples.length >= n) resolve();
      else next();
    });
    next();
  });
  child.kill();
  const kept = samples.slice(Math.floor(n / 10)).sort((a, b) => a - b);
  return kept[Math.floor(kept.length / 2)] as number;
}
