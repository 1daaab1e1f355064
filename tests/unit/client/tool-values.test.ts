// The client's ToolValues (client/types.ts, written by hand: the document types every `value` as
// any JSON) pinned to the value types of the service's own tool definitions, so that changing a
// tool's output schema fails tsc here until the client says the same. The checks are types (tsc
// runs over tests/); the runtime part only makes vitest see a test.
import { describe, expectTypeOf, it } from 'vitest';
import type { RunCodeValue, ToolResultOf, ToolValues } from '../../../client/index.ts';
import type { JsonValue } from '../../../host/json.ts';
import type { askUserQuestionTool } from '../../../host/tools/builtin/ask-user-question.ts';
import type { bashTool } from '../../../host/tools/builtin/bash.ts';
import type { readTool } from '../../../host/tools/builtin/read.ts';
import type { writeTool } from '../../../host/tools/builtin/write.ts';
import type { RunCodeValue as ServiceRunCodeValue } from '../../../host/tools/ptc/run-code.ts';
import type { ToolDefinition } from '../../../host/tools/types.ts';

type ValueOf<T> = T extends ToolDefinition<infer _A, infer V> ? V : never;

describe('ToolValues', () => {
  it("match the service's tool definitions", () => {
    expectTypeOf<ToolValues['run_code']>().toEqualTypeOf<ServiceRunCodeValue>();
    expectTypeOf<RunCodeValue['value']>().toEqualTypeOf<JsonValue | undefined>();
    expectTypeOf<ToolValues['bash']>().toEqualTypeOf<ValueOf<typeof bashTool>>();
    expectTypeOf<ToolValues['read']>().toEqualTypeOf<ValueOf<typeof readTool>>();
    expectTypeOf<ToolValues['write']>().toEqualTypeOf<ValueOf<typeof writeTool>>();
    expectTypeOf<ToolValues['ask_user_question']>().toEqualTypeOf<ValueOf<typeof askUserQuestionTool>>();
  });

  it('type the value of a call by its tool name, and leave other tools unknown', () => {
    expectTypeOf<ToolResultOf<'run_code'>['value']>().toEqualTypeOf<RunCodeValue | undefined>();
    expectTypeOf<ToolResultOf<'my_remote_tool'>['value']>().toEqualTypeOf<unknown>();
  });
});
