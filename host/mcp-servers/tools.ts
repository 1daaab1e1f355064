// An MCP server's tools as tools of the agent: one definition per listed tool, under its
// model-facing name (names.ts), with the server's JSON Schema validated by the same validator remote
// and plugin tools use (every `pattern` on the linear-time engine: host/tools/safe-schema.ts), and a
// body that calls the server through its runner. Results: text and images become content the model
// sees; other blocks (audio, resource links, embedded resources) a line of text saying what they
// were; the value (what code mode receives) is `{ content, structuredContent? }` as MCP has it.
// An `isError` result fails the call (TOOL_FAILED with the server's text), as a tool failure the
// model can read. Everything here comes from the server: hostile, bounded, never trusted.
import type { CallToolResult } from '@modelcontextprotocol/client';
import { messageOf, SandboxError } from '../errors.ts';
import { MAX_VALUE_DEPTH, nestedDeeperThan } from '../isolates/arguments.ts';
import type { JsonValue } from '../json.ts';
import { backstopTimeout } from '../tools/define.ts';
import { defineJsonSchemaTool } from '../tools/json-schema-tool.ts';
import { validationSchemaOf, withClientSchema } from '../tools/safe-schema.ts';
import type { ContentPart, ToolDefinition } from '../tools/types.ts';
import { noteSkip } from './listing.ts';
import { NameMap } from './names.ts';
import type { McpRunner } from './runner.ts';
import type { McpSkipped, McpToolInfo } from './types.ts';

const MAX_TEXT_ERROR = 4000;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface McpDefinitions {
  definitions: ToolDefinition[];
  /** Model-facing name → the server's tool name. */
  names: Array<{ name: string; tool: string }>;
  /** What the listing left out and what could not be defined: counted, the first few with reasons. */
  skipped: McpSkipped;
  /** Why the listing stopped early, when it did. */
  incomplete?: string;
}

/** Definitions for a server's listed tools; a tool that cannot be one is skipped with its reason. */
export function defineMcpTools(runner: McpRunner, tools: readonly McpToolInfo[]): McpDefinitions {
  const server = runner.spec.name;
  const map = new NameMap(server);
  const { skipped, incomplete } = runner.listing();
  const out: McpDefinitions = {
    definitions: [],
    names: [],
    skipped: { count: skipped.count, first: [...skipped.first] },
    ...(incomplete === undefined ? {} : { incomplete }),
  };
  for (const tool of tools) {
    const added = map.add(tool.name);
    if ('collidesWith' in added) {
      noteSkip(out.skipped, tool.name, `its name collides with ${added.collidesWith}`);
      continue;
    }
    try {
      out.definitions.push(defineOne(runner, added.name, tool));
      out.names.push({ name: added.name, tool: tool.name });
    } catch (error) {
      noteSkip(out.skipped, tool.name, messageOf(error).slice(0, 500));
    }
  }
  return out;
}

function defineOne(runner: McpRunner, name: string, tool: McpToolInfo): ToolDefinition {
  const schema = { type: 'object', ...tool.inputSchema };
  const definition = defineJsonSchemaTool({
    name,
    description: `${tool.description} (MCP server ${runner.spec.name}, tool ${tool.name})`,
    parameters: validationSchemaOf(schema, `MCP tool ${name}`),
    // The runner's own deadlines (a start, then the call) answer first; this is the backstop.
    timeoutMs: backstopTimeout(runner.deadlineMs),
    execute: async (args, exec) => mcpValue(await runner.call(tool.name, args, exec.signal)),
    output: { render: (_args, value) => contentOf(value) },
  });
  return withClientSchema(definition, schema);
}

/** The value of a successful call; an `isError` result throws TOOL_FAILED with its text. */
export function mcpValue(result: CallToolResult): JsonValue {
  const blocks = Array.isArray(result.content) ? result.content : [];
  if (result.isError === true) {
    const text = blocks
      .map((b) => (b.type === 'text' && typeof b.text === 'string' ? b.text : ''))
      .join('\n')
      .slice(0, MAX_TEXT_ERROR);
    throw new SandboxError('TOOL_FAILED', text === '' ? 'The MCP tool reported an error.' : text);
  }
  const content = blocks.map(partOf);
  const value: Record<string, JsonValue> = { content: content as unknown as JsonValue };
  if (result.structuredContent !== undefined) {
    if (nestedDeeperThan(result.structuredContent, MAX_VALUE_DEPTH))
      throw new SandboxError(
        'TOOL_FAILED',
        `The MCP tool's structured content nests more than ${MAX_VALUE_DEPTH} levels deep.`,
      );
    value.structuredContent = result.structuredContent as unknown as JsonValue;
  }
  return value;
}

function partOf(block: CallToolResult['content'][number]): ContentPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(block.text) };
    case 'image':
      if (
        typeof block.data === 'string' &&
        BASE64.test(block.data) &&
        typeof block.mimeType === 'string' &&
        /^image\/[A-Za-z0-9.+-]{1,64}$/.test(block.mimeType)
      )
        return { type: 'image', data: block.data, mimeType: block.mimeType };
      return { type: 'text', text: '[an image the MCP server sent malformed]' };
    case 'audio':
      return { type: 'text', text: `[audio, ${String(block.mimeType).slice(0, 64)}, not shown]` };
    case 'resource_link':
      return { type: 'text', text: `[resource link] ${String(block.uri).slice(0, 2000)}` };
    case 'resource': {
      const r = block.resource as { uri?: unknown; text?: unknown };
      return typeof r.text === 'string'
        ? { type: 'text', text: r.text }
        : { type: 'text', text: `[resource ${String(r.uri).slice(0, 2000)}, binary, not shown]` };
    }
    default:
      return { type: 'text', text: '[a content block of a kind this service does not show]' };
  }
}

function contentOf(value: JsonValue): ContentPart[] {
  const content = (value as { content?: ContentPart[] }).content ?? [];
  return content.length > 0 ? content : [{ type: 'text', text: '(no content)' }];
}
