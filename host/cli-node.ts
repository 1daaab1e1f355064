// The node agent's operator commands (host/cli.ts `node snapshots …`): what a node machine's own
// disk holds that no control plane can be asked about. Today: the snapshot files a node agent kept
// before each control-plane instance had its own folder, which no instance is served until the
// operator gives each to the instance that took it (workspaces/loop-unassigned.ts, docs/nodes.md
// "Snapshots of several instances"). They act on DSH_WORKSPACES_DIR, whether the agent runs or not,
// and print JSON.
import type { Config } from './config.ts';

export const NODE_USAGE = `  node snapshots                     the snapshot files on this node that no instance is served
                                     (kept before instances had their own; docs/nodes.md)
  node snapshots assign <instance> <id>...
                                     give those snapshots to that instance (its store's instance id)`;

/** `node snapshots [assign <instance> <id>…]`; the exit code. */
export async function runNodeCommand(
  config: Config,
  args: string[],
  out: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<number> {
  const [what, verb, instance, ...ids] = args;
  // Loaded here: the help text is all the command line needs of this module otherwise.
  const { assignSnapshots, unassignedSnapshots } = await import(
    './sandbox/docker/workspaces/loop-unassigned.ts'
  );
  if (what === 'snapshots' && verb === undefined) {
    out(JSON.stringify({ unassigned: await unassignedSnapshots(config.workspacesDir) }));
    return 0;
  }
  if (what === 'snapshots' && verb === 'assign' && instance !== undefined && ids.length > 0) {
    await assignSnapshots(config.workspacesDir, instance, ids);
    out(JSON.stringify({ instance, assigned: ids }));
    return 0;
  }
  process.stderr.write(`usage:\n${NODE_USAGE}\n`);
  return 2;
}
