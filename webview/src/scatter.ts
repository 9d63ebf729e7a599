// The rollout-vs-trainer probability scatter of one step (StepValidation.scatter) as an SVG: the diagonal
// where they agree, one dot per token, and the step's agreement figures in words beside it.
import type { StepValidation } from '../../daemon/protocol/training';
import { formatNumber } from './format';

const SVG = 'http://www.w3.org/2000/svg';
const PAD = 34;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Where a (rollout prob, trainer prob) pair lands in a `size`×`size` plot with both axes 0–1. Pure. */
export function scatterPosition([rollout, trainer]: [number, number], size: number): [number, number] {
  const span = size - 2 * PAD;
  const clamp = (p: number) => Math.min(1, Math.max(0, p));
  return [PAD + clamp(rollout) * span, size - PAD - clamp(trainer) * span];
}

/** The step's figures as one line of words (the plot's text alternative too). */
export function agreementText(step: number, v: StepValidation): string {
  return [
    `step ${step}`,
    `${formatNumber(v.tokens)} tokens with a rollout logprob`,
    `|Δ logprob| mean ${formatNumber(v.logprob_diff_mean)}, max ${formatNumber(v.logprob_diff_max)}`,
    `prob correlation ${formatNumber(v.prob_correlation, 4)}`,
    `TIS weight mean ${formatNumber(v.tis_weight_mean)}, ${formatNumber(v.tis_capped_fraction * 100)}% capped`,
  ].join(' · ');
}

/** The scatter plot; colours are CSS colour strings (theme variables resolved by the caller). */
export function scatterPlot(
  v: StepValidation,
  step: number,
  colors: { dot: string; axis: string; grid: string },
  size = 320,
): SVGSVGElement {
  const root = svg('svg', {
    width: size,
    height: size,
    viewBox: `0 0 ${size} ${size}`,
    role: 'img',
    'aria-label': `rollout vs trainer probability, ${agreementText(step, v)}`,
    class: 'scatter',
  });
  const [x0, y0] = scatterPosition([0, 0], size);
  const [x1, y1] = scatterPosition([1, 1], size);
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    const [x, y] = scatterPosition([t, t], size);
    root.append(
      svg('line', { x1: x, y1: y0, x2: x, y2: y1, stroke: colors.grid, 'stroke-width': 1 }),
      svg('line', { x1: x0, y1: y, x2: x1, y2: y, stroke: colors.grid, 'stroke-width': 1 }),
      svg('text', { x, y: y0 + 14, 'text-anchor': 'middle', fill: colors.axis, 'font-size': 10 }, String(t)),
      svg(
        'text',
        { x: x0 - 6, y: y + 3, 'text-anchor': 'end', fill: colors.axis, 'font-size': 10 },
        String(t),
      ),
    );
  }
  root.append(
    svg('line', {
      x1: x0,
      y1: y0,
      x2: x1,
      y2: y1,
      stroke: colors.axis,
      'stroke-dasharray': '4 4',
      class: 'diagonal',
    }),
    svg(
      'text',
      { x: (x0 + x1) / 2, y: size - 4, 'text-anchor': 'middle', fill: colors.axis, 'font-size': 11 },
      'rollout prob',
    ),
    svg(
      'text',
      {
        x: 10,
        y: (y0 + y1) / 2,
        'text-anchor': 'middle',
        fill: colors.axis,
        'font-size': 11,
        transform: `rotate(-90 10 ${(y0 + y1) / 2})`,
      },
      'trainer prob',
    ),
  );
  const dots = svg('g', { class: 'dots', fill: colors.dot, 'fill-opacity': 0.55 });
  for (const pair of v.scatter) {
    const [cx, cy] = scatterPosition(pair, size);
    dots.append(svg('circle', { cx: cx.toFixed(1), cy: cy.toFixed(1), r: 2.5 }));
  }
  root.append(dots);
  return root;
}
