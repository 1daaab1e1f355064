// Measures as people read them: bytes in binary units and milliseconds, each with the precision
// its size calls for (about three significant figures, never "512.0 MiB" nor "0.123456 ms").
// assets/timeline.js has a twin of durationText for rows it adds in the browser.

/** "812 B", "2 KiB", "5.03 MiB", "51.2 MiB", "512 MiB": three significant figures, no trailing zeros. */
export const bytesText = (bytes: number): string => {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${value} B`;
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${Number(value.toFixed(digits))} ${units[unit]}`;
};

/** "0.42 ms", "12.3 ms", "845 ms", "12.3 s". */
export const durationText = (ms: number): string => {
  if (!Number.isFinite(ms)) return '';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 100) return `${ms.toFixed(1)} ms`;
  if (ms < 10_000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
};

/** "1.2%", "37%". */
export const percentText = (percent: number): string =>
  `${percent >= 10 ? Math.round(percent) : percent.toFixed(1)}%`;
