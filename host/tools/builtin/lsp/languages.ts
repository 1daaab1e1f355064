// The language servers of the lsp tool and the files each one answers for. The programs are in the
// sandbox image (Dockerfile.sandbox, pinned by sandbox-image/lsp/package-lock.json) and run in the
// agent's container as the agent, like everything else it runs.

export interface Language {
  /** Also the key of its server among an agent's. */
  id: 'typescript' | 'python';
  command: string[];
  /** LSP languageId by file extension. */
  languageIds: Readonly<Record<string, string>>;
  /** The server's own `initializationOptions`. */
  initializationOptions?: object;
}

export const LANGUAGES: readonly Language[] = [
  {
    id: 'typescript',
    command: ['typescript-language-server', '--stdio'],
    // Its syntax-only server would answer first, before the project is loaded, with an import's
    // alias instead of the declaration it names: every query waits for the semantic one instead.
    initializationOptions: { tsserver: { useSyntaxServer: 'never' } },
    languageIds: {
      '.ts': 'typescript',
      '.mts': 'typescript',
      '.cts': 'typescript',
      '.tsx': 'typescriptreact',
      '.js': 'javascript',
      '.mjs': 'javascript',
      '.cjs': 'javascript',
      '.jsx': 'javascriptreact',
    },
  },
  {
    id: 'python',
    command: ['pyright-langserver', '--stdio'],
    languageIds: { '.py': 'python', '.pyi': 'python' },
  },
];

/** The language of a path by its extension, and the LSP languageId of the file. */
export function languageOf(path: string): { language: Language; languageId: string } | undefined {
  const dot = path.lastIndexOf('.');
  if (dot === -1 || dot < path.lastIndexOf('/')) return undefined;
  const extension = path.slice(dot).toLowerCase();
  for (const language of LANGUAGES) {
    const languageId = language.languageIds[extension];
    if (languageId !== undefined) return { language, languageId };
  }
  return undefined;
}

/** Every extension some server answers for, for messages. */
export const KNOWN_EXTENSIONS = LANGUAGES.flatMap((l) => Object.keys(l.languageIds));
