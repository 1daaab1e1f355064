// A stdio MCP server in the test's own process, for runners to open through a fake Sandbox's
// `stdio`: it answers each request at once, in whole messages (a microtask, no timer, no I/O), so
// its start takes no turn of the event loop of its own. `opened` counts the programs opened.
import type { StdioEnd, StdioOpenOptions } from '../../../host/sandbox/types.ts';

export interface InProcessServerOptions {
  /** serverInfo.name in its initialize answer. */
  name: string;
  /** Its tools/list answer. */
  page: unknown;
  /** Its tools/call answer for the request's params; none: tools/call goes unanswered. */
  call?: (params: { name: string; arguments: Record<string, unknown> }) => unknown;
}

export const inProcessMcpServer = ({ name, page, call }: InProcessServerOptions) => {
  const server = {
    opened: 0,
    open(options: StdioOpenOptions) {
      server.opened++;
      let end: (e: StdioEnd) => void = () => {};
      const ended = new Promise<StdioEnd>((resolve) => {
        end = resolve;
      });
      options.signal?.addEventListener('abort', () => end({ exitCode: null, signal: 'SIGKILL' }));
      const answer = (id: unknown, result: unknown) =>
        queueMicrotask(() =>
          options.onStdout(Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id, result })}\n`)),
        );
      return {
        async write(data: Uint8Array) {
          for (const line of Buffer.from(data).toString().split('\n').filter(Boolean)) {
            const m = JSON.parse(line);
            if (m.method === 'initialize')
              answer(m.id, {
                protocolVersion: m.params.protocolVersion,
                capabilities: { tools: {} },
                serverInfo: { name, version: '1' },
              });
            else if (m.method === 'tools/list') answer(m.id, page);
            else if (m.method === 'tools/call' && call !== undefined) answer(m.id, call(m.params));
          }
        },
        ended,
      };
    },
  };
  return server;
};
