// What the dashboard's charts take from the page: the axis font and a y axis as wide as its labels,
// and a redraw when VS Code switches the theme (the canvas keeps the colours it was drawn with).
import type uPlot from 'uplot';

export const TICK_SIZE = 6;
export const TICK_GAP = 4;

/** The axis labels' font: the workbench's, a size below the text's. */
export function axisFont(): string {
  const family = getComputedStyle(document.body).getPropertyValue('--vscode-font-family').trim();
  return `11px ${family || 'sans-serif'}`;
}

const measurer = document.createElement('canvas').getContext('2d');

/** The y axis as wide as its widest label ("−0.0236" whole, not "0.024" under a fixed 50 px). */
export function yAxisSize(_u: uPlot, values: string[] | null): number {
  if (!values || !measurer) return 50;
  measurer.font = axisFont();
  const widest = Math.max(0, ...values.map((v) => measurer.measureText(v).width));
  return Math.ceil(widest) + TICK_SIZE + TICK_GAP + 6;
}

/** A theme switch changes VS Code's colour variables on <html> and the class of <body>: redraw once. */
export function followTheme(redraw: () => void): void {
  let pending = false;
  const schedule = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      redraw();
    });
  };
  const watch = new MutationObserver(schedule);
  watch.observe(document.documentElement, { attributes: true, attributeFilter: ['style', 'class'] });
  watch.observe(document.body, { attributes: true, attributeFilter: ['class'] });
}
