// An attached terminal: xterm.js over the console's socket, which is the public terminal route
// with the session's key. Output arrives as binary frames; keystrokes go out as text frames, and
// a resize as the route's JSON control message.
import { Terminal } from '/console/assets/xterm.mjs';

const host = document.getElementById('terminal');
const state = document.getElementById('terminal-state');
/**
 * Terminal output is the agent's: a link it prints (OSC 8) opens only when it is http(s), after the
 * person confirms, in a tab that cannot reach this one. (xterm's default opens any scheme, javascript:
 * and data: included, with the console's origin; only the CSP stood in the way.)
 */
const linkHandler = {
  activate(_event, text) {
    let url;
    try {
      url = new URL(text);
    } catch {
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return;
    if (confirm(`Open ${url.href}? The terminal's output links to it.`))
      window.open(url.href, '_blank', 'noopener,noreferrer');
  },
};
const term = new Terminal({ convertEol: false, cursorBlink: true, cols: 100, rows: 30, linkHandler });
term.open(host);

const url = new URL(host.dataset.socket, location.href);
url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
const socket = new WebSocket(url, ['dsh.terminal.v1']);
socket.binaryType = 'arraybuffer';
socket.addEventListener('open', () => {
  state.textContent = 'attached';
  socket.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
  term.focus();
});
socket.addEventListener('message', (event) => {
  term.write(typeof event.data === 'string' ? event.data : new Uint8Array(event.data));
});
socket.addEventListener('close', (event) => {
  state.textContent = `closed (${event.code}${event.reason ? `: ${event.reason}` : ''})`;
});
// Input is sent as binary so that text that looks like a control message stays input.
const encoder = new TextEncoder();
term.onData((data) => {
  if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
});
