// What an agent's tools and results look like to an MCP client: the model-facing schemas as MCP
// `Tool`s (the same names, descriptions and JSON Schemas GET /tools returns) and a settled
// ToolResult as a `CallToolResult` (text and images as content blocks; a failure as an `isError`
// result whose text carries the stable error code, so a client can tell DENIED from TOOL_FAILED).
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import type { ToolResult, ToolSchema } from '../../tools/types.ts';

export function mcpTool(schema: ToolSchema): Tool {
  return {
    name: schema.name,
    description: schema.description,
    inputSchema: schema.parameters as Tool['inputSchema'],
  };
}

export function mcpResult(result: ToolResult): CallToolResult {
  if (!result.ok) {
    const code = result.error?.code ?? 'TOOL_FAILED';
    const message = result.error?.message ?? 'The call failed.';
    return { isError: true, content: [{ type: 'text', text: `Error [${code}]: ${message}` }] };
  }
  return {
    content: result.content.map((part) =>
      part.type === 'text'
        ? { type: 'text' as const, text: part.text }
        : { type: 'image' as const, data: part.data, mimeType: part.mimeType },
    ),
  };
}
