// sandboxd's check of its spawner's identity (identity.ts notApart over /proc/<pid>/status): the
// spawner is used only when its uids, gids AND supplementary groups are sandboxd's split (uids 0,
// the agent's, 0; gids the servers', the agent's, the servers'; no group), so a spawner that kept
// a group or a gid of the wrong side (its commands would get it) is given up like one with the
// wrong uids. Status texts here are what the kernel writes, and hostile or cut ones.
import { describe, expect, it } from 'vitest';
import { notApart, procIdsIn, procIdsOf } from '../../../sandbox-image/sandboxd/identity.ts';

const AGENT = { uid: 1000, gid: 1000 };
const SERVERS = 1001;

const status = (uid: string, gid: string, groups: string) =>
  `Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\nPid:\t42\nPPid:\t1\nTracerPid:\t0\nUid:\t${uid}\nGid:\t${gid}\nFDSize:\t64\nGroups:\t${groups}\nNStgid:\t42\n`;
const verdict = (uid: string, gid: string, groups: string) =>
  notApart(procIdsIn(status(uid, gid, groups)), AGENT, SERVERS);

describe("the spawner's identity check", () => {
  it('accepts the split sandboxd runs with (the filesystem ids follow the effective ones)', () => {
    expect(verdict('0\t1000\t0\t1000', '1001\t1000\t1001\t1000', '')).toBeUndefined();
    // The kernel ends an empty Groups line with a space.
    expect(verdict('0\t1000\t0\t1000', '1001\t1000\t1001\t1000', ' ')).toBeUndefined();
  });

  it('refuses wrong uids, as before', () => {
    expect(verdict('0\t0\t0\t0', '1001\t1000\t1001\t1000', '')).toMatch(/uids 0 0 0/);
    expect(verdict('1000\t1000\t1000\t1000', '1001\t1000\t1001\t1000', '')).toMatch(/not uids 0 1000 0/);
  });

  it('refuses gids off the split: real, effective or saved', () => {
    // Root's group kept (gVisor's execve, apart_again failed half way).
    expect(verdict('0\t1000\t0\t1000', '0\t0\t0\t0', '')).toMatch(/gids 0 0 0/);
    // Effective gid the servers': its commands' files and processes in the servers' group.
    expect(verdict('0\t1000\t0\t1000', '1001\t1001\t1001\t1001', '')).toMatch(/gids 1001 1001 1001/);
    // Saved gid the agent's (execve copied the effective one and nothing set it back).
    expect(verdict('0\t1000\t0\t1000', '1001\t1000\t1000\t1000', '')).toMatch(/gids 1001 1000 1000/);
    // Real gid the agent's.
    expect(verdict('0\t1000\t0\t1000', '1000\t1000\t1001\t1000', '')).toBeDefined();
  });

  it('refuses any supplementary group', () => {
    expect(verdict('0\t1000\t0\t1000', '1001\t1000\t1001\t1000', '0')).toMatch(/groups \[0\]/);
    expect(verdict('0\t1000\t0\t1000', '1001\t1000\t1001\t1000', '1000 1001')).toMatch(
      /groups \[1000 1001\]/,
    );
  });

  it('refuses what it cannot read: a gone process, missing or malformed lines', () => {
    expect(notApart(undefined, AGENT, SERVERS)).toMatch(/cannot be read/);
    expect(notApart(procIdsOf(2 ** 30), AGENT, SERVERS)).toMatch(/cannot be read/);
    expect(procIdsIn('Uid:\t0\t1000\t0\t1000\nGroups:\t\n')).toBeUndefined(); // no Gid line
    expect(procIdsIn('Uid:\t0\t1000\t0\t1000\nGid:\t1001\t1000\nGroups:\t\n')).toBeUndefined(); // cut
    expect(procIdsIn('Uid:\t0\t1000\t0\t1000\nGid:\t1001\t1000\t1001\t1000\n')).toBeUndefined(); // no Groups
    expect(procIdsIn('Uid:\t0\t1000\t0\t1000\nGid:\t1001\t-1\t1001\t1000\nGroups:\t\n')).toBeUndefined();
    expect(
      procIdsIn('Uid:\t0\t1000\t0\t1000\nGid:\t1001\t1000\t1001\t99999999999999999999\nGroups:\t\n'),
    ).toBeUndefined();
    // A process name (the agent may pick its own) naming the right ids: the kernel escapes its
    // newline, so only the real Gid line, at a line's start, is read.
    const forged = status('0\t1000\t0\t1000', '0\t0\t0\t0', '').replace(
      'Name:\tpython3',
      'Name:\tx\\nGid:\t1001\t1000\t1001\t1000',
    );
    expect(notApart(procIdsIn(forged), AGENT, SERVERS)).toMatch(/gids 0 0 0/);
  });

  it('reads this process as the kernel lists it', () => {
    const mine = procIdsOf(process.pid);
    expect(mine?.uids.slice(0, 3)).toEqual([process.getuid?.(), process.geteuid?.(), expect.any(Number)]);
    expect(mine?.gids.slice(0, 2)).toEqual([process.getgid?.(), process.getegid?.()]);
    expect(mine?.groups).toEqual(expect.any(Array));
  });
});
