// HTML to readable markdown: the page parsed by linkedom (a small DOM, no layout, no scripts run),
// its links and images made absolute against the page's URL, the article picked out by Mozilla's
// Readability (Firefox's Reader View), and turned into markdown by Turndown. A page Readability finds
// no article in is converted whole (body only, without scripts and styles). Runs in the readable
// worker (./worker.ts), never on the control plane's event loop: parsing is CPU-bound in the input.
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';

export interface Readable {
  title?: string;
  markdown: string;
}

const absolute = (value: string, base: string): string => {
  try {
    return new URL(value, base).href;
  } catch {
    return value;
  }
};

export function htmlToMarkdown(html: string, url: string): Readable {
  // linkedom reads a whole document; a fragment (no <html>) is given one.
  const whole = /<html[\s>]/i.test(html)
    ? html
    : `<!doctype html><html><head></head><body>${html}</body></html>`;
  const { document } = parseHTML(whole);
  for (const node of document.querySelectorAll('script, style, noscript, template, iframe, object, embed'))
    node.remove();
  for (const a of document.querySelectorAll('a[href]'))
    a.setAttribute('href', absolute(a.getAttribute('href') ?? '', url));
  for (const img of document.querySelectorAll('img[src]'))
    img.setAttribute('src', absolute(img.getAttribute('src') ?? '', url));
  const fallbackTitle = document.querySelector('title')?.textContent?.trim() || undefined;
  const bodyHtml = document.body?.innerHTML ?? html;
  // Readability changes the document it reads, so the fallback was taken first.
  const article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
    charThreshold: 100,
  }).parse();
  const turndown = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
  });
  const markdown = turndown.turndown(article?.content ?? bodyHtml).trim();
  const title = article?.title?.trim() || fallbackTitle;
  return title === undefined ? { markdown } : { title, markdown };
}
