// An attached terminal: xterm.js over the console's socket, which is the public terminal route
// with the session's key. Output arrives as binary frames; keystrokes go out as text frames, and
// a resize as the route's JSON control message.
import { Terminal } from '/console/assets/xterm.mjs';

const host = document.getElementById('terminal');
const state = document.getElementById('terminal-state');
const term = new Terminal({ convertEol: false, cursorBlink: true, cols: 100, rows: 30 });
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
