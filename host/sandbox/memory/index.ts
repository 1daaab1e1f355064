// Entry point of the memory provider (no Docker, no native modules): safe for any unit test to import.

export type { MemoryFs, MemoryFsOptions } from './fs.ts';
export { createMemoryFs } from './fs.ts';
export type { MemoryProcess, MemoryProviderOptions, MemoryRun, MemorySandbox } from './provider.ts';
export { createMemoryProvider, MEMORY_DEFAULT_LIMITS } from './provider.ts';
