// Run dashboard: live uPlot charts of a run's per-step metrics (smoothed on request, other runs
// overlaid for comparison, `validation:` thresholds as dashed lines), a step's rollout-vs-trainer
// scatter, and its config as a form.
import 'uplot/dist/uPlot.min.css';
import './dashboard.css';
import uPlot from 'uplot';
import type { Run, RunMetrics, RunWorkers } from '../../daemon/protocol/entities';
import { AgreementView } from './agreement';
import { axisFont, followTheme, TICK_GAP, TICK_SIZE, yAxisSize } from './chartStyle';
import { configSections } from './configView';
import { clear, h } from './dom';
import { errorPage } from './errorPage';
import { formatNumber } from './format';
import {
  alignSeries,
  chartSpecs,
  flatRange,
  latest,
  seriesOf,
  smooth,
  thresholdsOf,
  upsertMetrics,
} from './metrics';
import {
  type DashboardState,
  type FromWebview,
  MAX_COMPARED,
  type StepProgress,
  ToDashboard,
  type VsCodeApi,
} from './protocol';
import { type HeaderState, renderHeader, renderProgress } from './runHeader';
import { runLabels } from './runLabels';

declare function acquireVsCodeApi(): VsCodeApi<DashboardState>;
const vscode = acquireVsCodeApi();
const root = h('div', { id: 'root' });
document.body.append(root);

let run: Run | null = null;
let rows: RunMetrics[] = [];
let workers: RunWorkers | undefined;
/** Other runs drawn on the same charts, in the order picked. */
let compared: { run: Run; rows: RunMetrics[] }[] = [];
let otherRuns: Pick<Run, 'id' | 'name' | 'status' | 'created_at'>[] = [];
/** The current step's rollouts (running runs only). */
let progress: StepProgress | null = null;
/** Whether the daemon runs (when it stopped, what is shown is what it last said). */
let daemonRunning = true;
let smoothing = vscode.getState()?.smoothing ?? 0;
let compareIds = vscode.getState()?.compare ?? [];
let scatterStep = vscode.getState()?.scatter_step ?? null;
const post = (m: FromWebview) => vscode.postMessage(m);
const agreement = new AgreementView(
  post,
  scatterStep,
  (step) => {
    scatterStep = step;
    saveState();
  },
  (name, fallback) => color(name, fallback),
);
const plots = new Map<string, uPlot>();
// one colour per run across every chart (the run itself first)
const PALETTE = [
  '--vscode-charts-blue',
  '--vscode-charts-orange',
  '--vscode-charts-green',
  '--vscode-charts-purple',
  '--vscode-charts-red',
  '--vscode-charts-yellow',
];

window.addEventListener('message', (ev: MessageEvent) => {
  const parsed = ToDashboard.safeParse(ev.data);
  if (!parsed.success) return;
  const msg = parsed.data;
  switch (msg.type) {
    case 'dashboard':
      daemonRunning = true;
      if (run?.id !== msg.run.id) workers = undefined;
      run = msg.run;
      rows = msg.metrics;
      saveState();
      render();
      if (compareIds.length > 0 && compared.length === 0)
        vscode.postMessage({ type: 'compareRuns', run_ids: compareIds });
      break;
    case 'runs':
      otherRuns = msg.runs.filter((r) => r.id !== run?.id);
      // a run of the same name may have come: the title and legends name runs apart
      render();
      break;
    case 'compare':
      compared = msg.runs.map((c) => ({ run: c.run, rows: c.metrics }));
      render();
      break;
    case 'run':
      if (run && msg.run.id === run.id) {
        run = msg.run;
        showHeader();
      }
      break;
    case 'workers':
      if (run && msg.workers.run_id === run.id) {
        workers = msg.workers;
        showHeader();
      }
      break;
    case 'metrics': {
      const other = compared.find((c) => c.run.id === msg.metrics.run_id);
      if (other) other.rows = upsertMetrics(other.rows, msg.metrics);
      else if (run && msg.metrics.run_id === run.id) {
        rows = upsertMetrics(rows, msg.metrics);
        agreement.update(rows);
      } else break;
      // a chart that just got its first point (or a new metric key) needs a new plot
      if (chartSpecs(allRows()).some((s) => !plots.has(s.key) && seriesOf(allRows(), s.key)[0].length > 0))
        render();
      else updatePlots();
      break;
    }
    case 'validation':
      agreement.receive(msg);
      break;
    case 'progress':
      if (run && msg.progress.run_id === run.id) {
        progress = msg.progress;
        showProgress();
      }
      break;
    case 'daemon':
      daemonRunning = msg.running;
      showHeader();
      break;
    case 'error':
      for (const p of plots.values()) p.destroy();
      plots.clear();
      clear(root);
      root.append(...errorPage(msg.message, msg.daemon_stopped, (m) => vscode.postMessage(m)));
      break;
  }
});
vscode.postMessage({ type: 'ready' });
window.addEventListener('resize', () => {
  for (const p of plots.values()) p.setSize(size(p.root.parentElement as HTMLElement));
});

function color(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

function saveState() {
  if (run) vscode.setState({ run_id: run.id, smoothing, compare: compareIds, scatter_step: scatterStep });
}

function allRows(): RunMetrics[] {
  return [...rows, ...compared.flatMap((c) => c.rows)];
}

/** Each run's name as shown: where names clash, with when it started (the sidebar's labels). */
function labelOf(r: Pick<Run, 'id' | 'name'>): string {
  const known = [...(run ? [run] : []), ...otherRuns, ...compared.map((c) => c.run)];
  return runLabels(known.filter((x, i) => known.findIndex((y) => y.id === x.id) === i)).get(r.id) ?? r.name;
}

/** The runs on the charts, each with its rows and colour. */
function drawn(): { name: string; rows: RunMetrics[]; stroke: string }[] {
  if (!run) return [];
  return [{ run, rows }, ...compared].map((c, i) => ({
    name: labelOf(c.run),
    rows: c.rows,
    stroke: color(PALETTE[i % PALETTE.length], '#3794ff'),
  }));
}

/**
 * A chart's uPlot data: per run its raw values, and its smoothed values when smoothing is on; then one
 * constant column per `validation:` threshold on the metric.
 */
function chartData(key: string): uPlot.AlignedData {
  const series = drawn().flatMap((d) => {
    const [steps, values] = seriesOf(d.rows, key);
    return smoothing > 0
      ? [
          [steps, values] as [number[], (number | null)[]],
          [steps, smooth(values, smoothing)] as [number[], (number | null)[]],
        ]
      : [[steps, values] as [number[], (number | null)[]]];
  });
  const [steps, ...columns] = alignSeries(series);
  const lines = run ? thresholdsOf(run.config, key).map((t) => steps.map(() => t.value)) : [];
  return [steps, ...columns, ...lines] as uPlot.AlignedData;
}

/** The raw line under a smoothed one: the run's colour, faint. */
function faint(c: string): string {
  return /^#[0-9a-f]{6}$/i.test(c) ? `${c}4d` : c;
}

function size(el: HTMLElement | null): { width: number; height: number } {
  return { width: Math.max(260, (el?.clientWidth ?? 380) - 12), height: 180 };
}

/** The header's view of the dashboard's state (null before the first run arrives). */
function headerState(): HeaderState | null {
  return run ? { run, label: labelOf(run), daemonRunning, progress, workers } : null;
}

function showHeader() {
  const state = headerState();
  if (state) renderHeader(state, post);
}

function showProgress() {
  const state = headerState();
  if (state) renderProgress(state);
}

/** Smoothing slider and the runs to compare with, above the charts. */
function renderToolbar() {
  const bar = document.getElementById('toolbar');
  if (!bar) return;
  clear(bar);
  const slider = h('input', {
    type: 'range',
    id: 'smoothing',
    min: 0,
    max: 0.99,
    step: 0.01,
    value: smoothing,
    'aria-describedby': 'smoothing-value',
  });
  const shown = h('output', { id: 'smoothing-value', for: 'smoothing' }, smoothingText());
  slider.addEventListener('input', () => {
    const was = smoothing;
    smoothing = Number(slider.value);
    shown.textContent = smoothingText();
    saveState();
    // the faint raw lines come and go with smoothing on/off: new plots then, new data otherwise
    if (was > 0 !== smoothing > 0) renderCharts();
    else updatePlots();
  });
  const picks = otherRuns.map((r) => {
    const box = h('input', {
      type: 'checkbox',
      value: r.id,
      checked: compareIds.includes(r.id),
      disabled: !compareIds.includes(r.id) && compareIds.length >= MAX_COMPARED,
    });
    box.addEventListener('change', () => {
      compareIds = box.checked ? [...compareIds, r.id] : compareIds.filter((id) => id !== r.id);
      saveState();
      if (compareIds.length === 0) {
        compared = [];
        render();
      } else vscode.postMessage({ type: 'compareRuns', run_ids: compareIds });
    });
    return h('label', { class: 'pick' }, box, ` ${labelOf(r)} `, h('span', { class: 'muted' }, r.status));
  });
  bar.append(
    h('label', { for: 'smoothing' }, 'Smoothing '),
    slider,
    shown,
    h(
      'details',
      { id: 'compare' },
      h('summary', {}, `Compare with other runs${compareIds.length ? ` (${compareIds.length})` : ''}`),
      picks.length > 0 ? picks : h('span', { class: 'muted' }, 'No other runs yet.'),
      picks.length > MAX_COMPARED ? h('div', { class: 'muted' }, `Up to ${MAX_COMPARED} at a time.`) : null,
    ),
  );
  const open = document.getElementById('compare') as HTMLDetailsElement | null;
  if (open && compareIds.length > 0) open.open = true;
}

function smoothingText(): string {
  return smoothing > 0 ? formatNumber(smoothing, 2) : 'off';
}

function render() {
  if (!run) return;
  clear(root);
  root.append(h('header', { class: 'bar', id: 'header' }));
  showHeader();
  root.append(h('div', { class: 'toolbar', id: 'toolbar' }));
  renderToolbar();
  root.append(h('div', { class: 'charts', id: 'charts' }));
  renderCharts();
  root.append(agreement.render(run.id, rows));
  root.append(configForm(run.config));
}

function renderCharts() {
  const grid = document.getElementById('charts');
  if (!grid) return;
  for (const p of plots.values()) p.destroy();
  plots.clear();
  clear(grid);
  const fg = color('--vscode-foreground', '#ccc');
  const gridColor = color('--vscode-panel-border', '#8883');
  grid.dataset.axisStroke = fg;
  const runs = drawn();
  const all = allRows();
  for (const spec of chartSpecs(all)) {
    // the latest value in words too: the canvas says nothing to a screen reader
    const box = h(
      'div',
      { class: 'chart', 'data-key': spec.key, role: 'group', 'aria-label': spec.title },
      h('h3', {}, spec.title, h('span', { class: 'muted latest' }, latestText(spec.key))),
    );
    grid.append(box);
    if (seriesOf(all, spec.key)[0].length === 0) {
      box.append(h('div', { class: 'empty muted' }, 'no data yet'));
      continue;
    }
    const axis = {
      stroke: fg,
      font: axisFont(),
      grid: { stroke: gridColor, width: 1 },
      ticks: { stroke: gridColor, width: 1, size: TICK_SIZE },
      gap: TICK_GAP,
    };
    const data = chartData(spec.key);
    const points = { show: data[0].length < 50 };
    const limits = thresholdsOf(run?.config, spec.key);
    const series = chartSeries(runs, limits, points);
    if (limits.length > 0) box.dataset.thresholds = limits.map((t) => `${t.bound} ${t.value}`).join(', ');
    const plot = new uPlot(
      {
        ...size(box),
        scales: {
          x: { time: false },
          // all-equal values (a KL of 0 so far) get a small band, not uPlot's 0–100
          y: {
            range: (_u, min, max) =>
              min === null || max === null
                ? [0, 1]
                : min === max
                  ? flatRange(min)
                  : uPlot.rangeNum(min, max, 0.1, true),
          },
        },
        // steps are integers: no fractional ticks on x
        axes: [
          { ...axis, label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] },
          { ...axis, values: (_u, ticks) => ticks.map((t) => formatNumber(t)), size: yAxisSize },
        ],
        series,
        legend: { show: true },
        hooks: {
          // the y range on the element, for whoever checks the axis without reading pixels
          setScale: [
            (u, key) => {
              if (key === 'y') box.dataset.yRange = `${u.scales.y.min},${u.scales.y.max}`;
            },
          ],
        },
      },
      data,
      box,
    );
    // the legend lists each run once: the faint raw lines stay out of it
    const legendRows = plot.root.querySelectorAll('.u-legend .u-series');
    series.forEach((ser, i) => {
      if (ser.width === 1) legendRows[i]?.classList.add('raw');
    });
    plots.set(spec.key, plot);
  }
}

/** A chart's lines: per run its line (over its faint raw line when smoothing), then one dashed per threshold. */
function chartSeries(
  runs: ReturnType<typeof drawn>,
  limits: ReturnType<typeof thresholdsOf>,
  points: { show: boolean },
): uPlot.Series[] {
  const series: uPlot.Series[] = [{ label: 'step' }];
  for (const r of runs) {
    if (smoothing > 0) {
      series.push({ label: `${r.name} (raw)`, stroke: faint(r.stroke), width: 1, spanGaps: true });
      series.push({ label: r.name, stroke: r.stroke, width: 2, spanGaps: true, points: { show: false } });
    } else series.push({ label: r.name, stroke: r.stroke, width: 2, spanGaps: true, points });
  }
  for (const t of limits)
    series.push({
      label: `${t.bound} ${formatNumber(t.value)}`,
      stroke: color('--vscode-charts-red', '#f14c4c'),
      width: 1.5,
      dash: [6, 4],
      points: { show: false },
    });
  return series;
}

followTheme(() => {
  if (plots.size > 0) renderCharts();
});

function configForm(config: unknown): HTMLElement {
  return h(
    'section',
    { id: 'config' },
    h(
      'h2',
      {},
      'Run config ',
      h(
        'button',
        {
          onclick: () =>
            vscode.postMessage({
              type: 'copy',
              what: 'the run config as JSON',
              text: JSON.stringify(config, null, 2),
            }),
        },
        'Copy as JSON',
      ),
    ),
    configSections(config).map((sec) =>
      h(
        'div',
        { class: 'config-section' },
        h('h3', {}, sec.title),
        h(
          'table',
          { class: 'kv' },
          sec.rows.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, v))),
        ),
      ),
    ),
  );
}

function updatePlots() {
  for (const [key, plot] of plots) {
    plot.setData(chartData(key));
    const label = plot.root.parentElement?.querySelector('.latest');
    if (label) label.textContent = latestText(key);
  }
}

function latestText(key: string): string {
  const last = latest(rows, key);
  return last ? `${formatNumber(last.value)} at step ${last.step}` : '';
}
