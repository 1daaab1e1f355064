// Builds the sandbox image from Dockerfile.sandbox, tagged by a hash of its inputs (the Dockerfile,
// the sandboxd bundle, the lockfiles of its third-party programs (image-packages.ts) and the base image name) so that it is rebuilt only when they change. The
// bundle is built from sandbox-image/ and sandbox-wire/ only (SANDBOXD_SOURCES), never from host/,
// so a change to the control plane never changes the image or its tag; it is kept between starts
// under a hash of its sources (sandboxd-bundle.ts), so a warm start does not run esbuild.
// The base defaults to debian:bookworm-slim, as a user with a registry would build it; when that
// base is neither present nor pullable, one is made with mmdebstrap from the machine's own apt
// sources and imported with `docker import`.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { dockerClient } from './docker-engine.ts';
import { socketImageExists } from './engine-socket.ts';
import { log, run, which } from './exec.ts';
import { IMAGE_PACKAGES, installImagePackage, packageLock, packTree } from './image-packages.ts';
import { sandboxdBundle } from './sandboxd-bundle.ts';

export { bundleSandboxd, SANDBOXD_SOURCES } from './sandboxd-bundle.ts';

const ROOT = join(import.meta.dirname, '..', '..');
export const DEFAULT_BASE = 'debian:bookworm-slim';
export const IMAGE_REPO = 'dsh-sandbox';

const imageExists = async (docker: Docker, name: string): Promise<boolean> => {
  try {
    await docker.getImage(name).inspect();
    return true;
  } catch {
    return false;
  }
};

export interface ImageInputs {
  tag: string;
  base: string;
  dockerfile: Buffer;
  sandboxd: Buffer;
  /** The lockfiles of the third-party programs installed into the image (image-packages.ts), in IMAGE_PACKAGES order. */
  locks: Buffer[];
}

export const imageInputs = async (
  base = process.env.DSH_BASE_IMAGE ?? DEFAULT_BASE,
): Promise<ImageInputs> => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile.sandbox'));
  const sandboxd = await sandboxdBundle();
  const locks = IMAGE_PACKAGES.map(packageLock);
  const hash = createHash('sha256').update(dockerfile).update('\0').update(sandboxd).update('\0');
  for (const lock of locks) hash.update(lock).update('\0');
  hash.update(base);
  return { tag: `${IMAGE_REPO}:${hash.digest('hex').slice(0, 12)}`, base, dockerfile, sandboxd, locks };
};

const pullWithin = async (docker: Docker, name: string, ms: number): Promise<boolean> => {
  try {
    const stream = await docker.pull(name, { abortSignal: AbortSignal.timeout(ms) });
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (error: Error | null) => (error ? reject(error) : resolve())),
    );
    return imageExists(docker, name);
  } catch {
    return false;
  }
};

/** The machine's own apt sources, passed to mmdebstrap as files (never a host name of ours). */
const aptSourceFiles = (): string[] => {
  const files: string[] = [];
  if (existsSync('/etc/apt/sources.list') && readFileSync('/etc/apt/sources.list', 'utf8').trim()) {
    files.push('/etc/apt/sources.list');
  }
  const dir = '/etc/apt/sources.list.d';
  if (existsSync(dir)) {
    for (const name of readdirSync(dir).sort()) {
      if (name.endsWith('.sources') || name.endsWith('.list')) files.push(join(dir, name));
    }
  }
  return files;
};

const debianCodename = (): string | undefined =>
  /^VERSION_CODENAME=(.+)$/m.exec(
    existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '',
  )?.[1];

const makeBaseWithMmdebstrap = async (docker: Docker): Promise<string> => {
  const codename = debianCodename();
  if (!codename || process.getuid?.() !== 0) {
    throw new Error(
      `base image ${DEFAULT_BASE} is missing and cannot be pulled; load it (docker load) or set DSH_BASE_IMAGE`,
    );
  }
  const name = `dsh-base:${codename}`;
  if (await imageExists(docker, name)) return name;
  if (!(await which('mmdebstrap'))) {
    log("installing mmdebstrap to make a base image from the machine's apt sources ...");
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    await run('apt-get', ['update', '-qq'], { env, inherit: true });
    const install = await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'mmdebstrap'], {
      env,
      inherit: true,
    });
    if (install.code !== 0) throw new Error('apt-get install mmdebstrap failed');
  }
  log(`making base image ${name} with mmdebstrap (one time, a minute or two) ...`);
  const child = spawn('mmdebstrap', ['--variant=minbase', '--quiet', codename, '-', ...aptSourceFiles()], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
  const [repo, tag] = name.split(':') as [string, string];
  const imported = await docker.importImage(child.stdout as never, { repo, tag });
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(imported as NodeJS.ReadableStream, (error: Error | null) =>
      error ? reject(error) : resolve(),
    ),
  );
  const code = await exited;
  if (code !== 0 || !(await imageExists(docker, name)))
    throw new Error(`mmdebstrap failed with exit code ${code}`);
  return name;
};

export const resolveBase = async (docker: Docker, wanted: string): Promise<string> => {
  if (await imageExists(docker, wanted)) return wanted;
  if (wanted !== DEFAULT_BASE) {
    if (await pullWithin(docker, wanted, 60_000)) return wanted;
    throw new Error(`base image ${wanted} (DSH_BASE_IMAGE) is neither present nor pullable`);
  }
  const codename = debianCodename();
  if (codename && (await imageExists(docker, `dsh-base:${codename}`))) return `dsh-base:${codename}`;
  log(`base image ${wanted} is missing; trying to pull it ...`);
  if (await pullWithin(docker, wanted, 20_000)) return wanted;
  return makeBaseWithMmdebstrap(docker);
};

const contextTar = async (inputs: ImageInputs, installed: string[]): Promise<NodeJS.ReadableStream> => {
  // Imported for a build only: a warm start finds the image and never packs.
  const { default: tarStream } = await import('tar-stream');
  const pack = tarStream.pack();
  pack.entry({ name: 'Dockerfile', mode: 0o644 }, inputs.dockerfile);
  pack.entry({ name: 'sandboxd.cjs', mode: 0o644 }, inputs.sandboxd);
  for (const [i, pkg] of IMAGE_PACKAGES.entries()) packTree(pack, installed[i] as string, pkg.folder);
  pack.finalize();
  return pack as unknown as NodeJS.ReadableStream;
};

/** Returns the tag of an up-to-date sandbox image, building it when its inputs changed. */
export const ensureSandboxImage = async (client?: Docker): Promise<{ tag: string; built: boolean }> => {
  const inputs = await imageInputs();
  // Present (every warm start): asked on the engine's socket, without dockerode.
  if (client === undefined && (await socketImageExists(inputs.tag)) === true)
    return { tag: inputs.tag, built: false };
  const docker = client ?? (await dockerClient());
  if (await imageExists(docker, inputs.tag)) return { tag: inputs.tag, built: false };
  const base = await resolveBase(docker, inputs.base);
  const installed: string[] = [];
  for (const pkg of IMAGE_PACKAGES) installed.push(await installImagePackage(pkg));
  log(`building sandbox image ${inputs.tag} from ${base} ...`);
  const stream = await docker.buildImage(await contextTar(inputs, installed), {
    t: inputs.tag,
    networkmode: 'host',
    buildargs: { BASE_IMAGE: base },
    rm: true,
    forcerm: true,
    labels: { 'dsh.image': 'sandbox' },
  });
  const tail: string[] = [];
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(
      stream,
      (error: Error | null, output: Array<{ error?: string }>) => {
        const failed = error ?? output.find((o) => o.error)?.error;
        if (failed) reject(new Error(`sandbox image build failed: ${String(failed)}\n${tail.join('')}`));
        else resolve();
      },
      (event: { stream?: string }) => {
        if (event.stream) {
          tail.push(event.stream);
          if (tail.length > 40) tail.shift();
          if (process.env.DSH_VERBOSE) process.stderr.write(event.stream);
        }
      },
    ),
  );
  if (!(await imageExists(docker, inputs.tag)))
    throw new Error(`sandbox image ${inputs.tag} missing after build`);
  return { tag: inputs.tag, built: true };
};
