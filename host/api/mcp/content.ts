// What an agent's tools and results look like to an MCP client: the model-facing schemas as MCP
// `Tool`s (the same names, descriptions, JSON Schemas and hints GET /tools returns) and a settled
// ToolResult as a `CallToolResult` (text and images as content blocks; a failure as an `isError`
// result whose text carries the stable error code, so a client can tell DENIED from TOOL_FAILED).
// A result whose value is a JSON object also carries it as `structuredContent` (the content blocks
// stay, for clients that read only those); a redacted value never does (it is not enumerable).
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import type { ToolResult, ToolSchema } from '../../tools/types.ts';

export function mcpTool(schema: ToolSchema): Tool {
  return {
    name: schema.name,
    description: schema.description,
    inputSchema: schema.parameters as Tool['inputSchema'],
    ...(schema.annotations === undefined ? {} : { annotations: { ...schema.annotations } }),
  };
}

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function mcpResult(result: ToolResult): CallToolResult {
  if (!result.ok) {
    const code = result.error?.code ?? 'TOOL_FAILED';
    const message = result.error?.message ?? 'The call failed.';
    return { isError: true, content: [{ type: 'text', text: `Error [${code}]: ${message}` }] };
  }
  const content = result.content.map((part) =>
    part.type === 'text'
      ? { type: 'text' as const, text: part.text }
      : { type: 'image' as const, data: part.data, mimeType: part.mimeType },
  );
  const value = result.redacted === true ? undefined : result.value;
  return isJsonObject(value) ? { content, structuredContent: value } : { content };
}
