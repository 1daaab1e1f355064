// The default team directory until the teams room wires its own: every agent leads a one-agent
// team of its own (teamOf(id) = id), so a board is an agent's private task list, and no agent has
// a parent.
import type { TeamDirectory } from './types.ts';

export const soloDirectory: TeamDirectory = {
  teamOf: async (agentId) => agentId,
  members: async (teamId) => [{ id: teamId }],
  ancestors: async () => [],
};
