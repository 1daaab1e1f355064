// An agent's workspace files over the byte routes: one file's raw bytes in and out
// (`/files?path=`), a directory as an uncompressed tar in and out (`/archive?path=`), one
// directory's entries (`/directory?path=`), and removal (DELETE `/files?path=`). Paths are
// relative to the workspace (the service refuses others with PATH_OUTSIDE_WORKSPACE). Downloads
// come as web streams so a large file is never held whole unless read() is asked to.
import { ok, pathOf, type Transport } from './http.ts';
import type { ArchiveUploaded, DirectoryListing, Uploaded } from './types.ts';

/** What an upload takes: text (UTF-8), bytes, a Blob or a stream of bytes. */
export type UploadBody = string | Uint8Array | Blob | ReadableStream<Uint8Array>;

export class AgentFiles {
  readonly #transport: Transport;
  readonly #agentId: string;

  constructor(transport: Transport, agentId: string) {
    this.#transport = transport;
    this.#agentId = agentId;
  }

  /** Writes (creates or replaces) the file at `path`; it changes only once all of it arrived. */
  async write(path: string, content: UploadBody): Promise<Uploaded> {
    return this.#put('/v1/agents/{id}/files', path, content, 'application/octet-stream');
  }

  /** The file's bytes. */
  async read(path: string): Promise<Uint8Array> {
    return new Uint8Array(await (await this.#get('/v1/agents/{id}/files', path)).arrayBuffer());
  }

  /** The file as UTF-8 text. */
  async readText(path: string): Promise<string> {
    return (await this.#get('/v1/agents/{id}/files', path)).text();
  }

  /** The file's bytes as a stream, read from the sandbox as the stream is read. */
  async download(path: string): Promise<ReadableStream<Uint8Array>> {
    return bodyOf(await this.#get('/v1/agents/{id}/files', path));
  }

  /** Extracts an uncompressed tar into the directory `path` (once all of it was checked). */
  async uploadArchive(path: string, tar: UploadBody): Promise<ArchiveUploaded> {
    return this.#put('/v1/agents/{id}/archive', path, tar, 'application/x-tar');
  }

  /** The file or directory at `path` as an uncompressed tar stream. */
  async downloadArchive(path: string): Promise<ReadableStream<Uint8Array>> {
    return bodyOf(await this.#get('/v1/agents/{id}/archive', path));
  }

  /**
   * The entries of directory `path` (`.` is the workspace root), sorted by name, at most 1,000
   * (`truncated` says when there are more).
   */
  async list(path = '.'): Promise<DirectoryListing> {
    const params = { path: { id: this.#agentId }, query: { path } };
    return ok(this.#transport.api.GET('/v1/agents/{id}/directory', { params }));
  }

  /**
   * Removes the file, symlink (not what it points to) or empty directory at `path`; a directory
   * with its contents only with `recursive: true` (else DIRECTORY_NOT_EMPTY). The workspace root
   * cannot be removed (CONFLICT).
   */
  async remove(path: string, options: { recursive?: boolean } = {}): Promise<void> {
    const query = { path, ...(options.recursive ? { recursive: 'true' as const } : {}) };
    await ok(
      this.#transport.api.DELETE('/v1/agents/{id}/files', { params: { path: { id: this.#agentId }, query } }),
    );
  }

  #url(route: '/v1/agents/{id}/files' | '/v1/agents/{id}/archive', path: string): string {
    return `${pathOf(route, { id: this.#agentId })}?${new URLSearchParams({ path })}`;
  }

  #get(route: '/v1/agents/{id}/files' | '/v1/agents/{id}/archive', path: string): Promise<Response> {
    return this.#transport.request(this.#url(route, path));
  }

  async #put<R>(
    route: '/v1/agents/{id}/files' | '/v1/agents/{id}/archive',
    path: string,
    body: UploadBody,
    type: string,
  ): Promise<R> {
    const response = await this.#transport.request(this.#url(route, path), {
      method: 'PUT',
      headers: { 'Content-Type': type },
      body: body as NonNullable<RequestInit['body']>,
    });
    return (await response.json()) as R;
  }
}

function bodyOf(response: Response): ReadableStream<Uint8Array> {
  return response.body ?? new ReadableStream({ start: (controller) => controller.close() });
}
