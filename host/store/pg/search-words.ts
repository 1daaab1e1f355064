// The words Postgres indexes and searches, cut as SQLite's FTS5 unicode61 tokenizer cuts them
// (../search-text.ts indexes for FTS5): runs of letters and digits, everything else a separator,
// diacritics removed. Both the indexed text (pg/event-log-write.ts) and each search-box term
// (pg/event-search.ts) pass through searchWords() before to_tsvector/phraseto_tsquery, so
// Postgres's own parser only ever sees plain words between spaces: `pelican-77` is the words
// `pelican 77` on both sides (the parser alone would read `-77` as a signed number), `it's` is
// `it s`, and no character Postgres text cannot hold (NUL) reaches it.
// Invariant: the output holds only letters, digits and single spaces.

/** Anything past ASCII: only such text can hold marks to remove. */
const NON_ASCII = /[^\p{ASCII}]/u;
const MARKS = /\p{M}+/gu;
const SEPARATORS = /[^\p{L}\p{N}]+/gu;

export const searchWords = (text: string): string =>
  (NON_ASCII.test(text) ? text.normalize('NFD').replace(MARKS, '') : text).replace(SEPARATORS, ' ');
