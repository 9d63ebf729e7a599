// Reward curves for the terminal (Unicode block columns) and as an SVG file.

export interface Series {
  name: string;
  /** One value per step; null where the step has none. */
  values: (number | null)[];
}

const BLOCKS = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

function range(series: Series[]): { lo: number; hi: number } {
  const all = series.flatMap((s) => s.values).filter((v): v is number => v !== null && Number.isFinite(v));
  if (all.length === 0) return { lo: 0, hi: 1 };
  let lo = Math.min(...all);
  let hi = Math.max(...all);
  if (hi - lo < 1e-9) {
    lo -= 0.5;
    hi += 0.5;
  }
  return { lo, hi };
}

const label = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2));

/**
 * A column chart of one series, `height` rows of eighth-blocks, one column per step (each step repeated
 * to fill about `width` columns), with the y range on the left and the steps below.
 */
export function unicodePlot(series: Series, options: { height?: number; width?: number } = {}): string {
  const height = options.height ?? 8;
  const steps = series.values.length;
  if (steps === 0) return '(no data)';
  const repeat = Math.max(1, Math.floor((options.width ?? 60) / steps));
  const { lo, hi } = range([series]);
  const levels = series.values.map((v) =>
    v === null ? null : Math.round(((v - lo) / (hi - lo)) * (height * 8 - 1)) + 1,
  );
  const lines: string[] = [];
  const yWidth = Math.max(label(hi).length, label(lo).length);
  for (let row = height - 1; row >= 0; row--) {
    let line = '';
    for (const level of levels) {
      const fill = level === null ? 0 : Math.min(8, Math.max(0, level - row * 8));
      const cell = fill === 0 ? ' ' : BLOCKS[fill - 1];
      line += cell.repeat(repeat);
    }
    const y = row === height - 1 ? label(hi) : row === 0 ? label(lo) : '';
    lines.push(`${y.padStart(yWidth)} ┤${line}`);
  }
  const axis = `${' '.repeat(yWidth)} └${'─'.repeat(steps * repeat)}`;
  const first = 'step 0';
  const last = `${steps - 1}`;
  const ticks = `${' '.repeat(yWidth + 2)}${first}${last.padStart(Math.max(1, steps * repeat - first.length))}`;
  return [`${series.name}`, ...lines, axis, ticks].join('\n');
}

const COLORS = ['#2f6fdf', '#e07b00', '#2a9d4b', '#c0392b'];

const escapeXml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** An SVG line chart of the series over steps, with axes, a few grid lines and a legend. */
export function svgPlot(
  series: Series[],
  options: { title?: string; width?: number; height?: number } = {},
): string {
  const width = options.width ?? 640;
  const height = options.height ?? 360;
  const m = { left: 56, right: 16, top: 36, bottom: 40 };
  const steps = Math.max(1, ...series.map((s) => s.values.length));
  const { lo, hi } = range(series);
  const x = (i: number) => m.left + (steps === 1 ? 0 : (i / (steps - 1)) * (width - m.left - m.right));
  const y = (v: number) => height - m.bottom - ((v - lo) / (hi - lo)) * (height - m.top - m.bottom);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
  ];
  if (options.title) {
    parts.push(
      `<text x="${m.left}" y="20" font-size="14" font-weight="bold">${escapeXml(options.title)}</text>`,
    );
  }
  for (let k = 0; k <= 4; k++) {
    const v = lo + ((hi - lo) * k) / 4;
    const yy = y(v).toFixed(1);
    parts.push(
      `<line x1="${m.left}" y1="${yy}" x2="${width - m.right}" y2="${yy}" stroke="#ddd"/>`,
      `<text x="${m.left - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle">${label(v)}</text>`,
    );
  }
  const tickEvery = Math.max(1, Math.ceil(steps / 10));
  for (let i = 0; i < steps; i += tickEvery) {
    parts.push(`<text x="${x(i).toFixed(1)}" y="${height - m.bottom + 16}" text-anchor="middle">${i}</text>`);
  }
  parts.push(
    `<text x="${(m.left + width - m.right) / 2}" y="${height - 6}" text-anchor="middle">step</text>`,
    `<line x1="${m.left}" y1="${height - m.bottom}" x2="${width - m.right}" y2="${height - m.bottom}" stroke="#333"/>`,
    `<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${height - m.bottom}" stroke="#333"/>`,
  );
  series.forEach((s, n) => {
    const color = COLORS[n % COLORS.length];
    const points = s.values
      .map((v, i) => (v === null || !Number.isFinite(v) ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`))
      .filter((p): p is string => p !== null);
    if (points.length > 1) {
      parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.join(' ')}"/>`);
    }
    for (const p of points) {
      const [cx, cy] = p.split(',');
      parts.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${color}"/>`);
    }
    const lx = width - m.right - 150;
    const ly = m.top + 4 + n * 16;
    parts.push(
      `<line x1="${lx}" y1="${ly}" x2="${lx + 18}" y2="${ly}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${lx + 24}" y="${ly}" dominant-baseline="middle">${escapeXml(s.name)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
