// Run dashboard: live uPlot charts of a run's per-step metrics and its config.
import 'uplot/dist/uPlot.min.css';
import './dashboard.css';
import uPlot from 'uplot';
import type { Run, RunMetrics, RunWorkers } from '../../daemon/protocol/entities';
import { clear, h } from './dom';
import { chartSpecs, seriesOf, upsertMetrics } from './metrics';
import { type DashboardState, ToDashboard, type VsCodeApi } from './protocol';
import { describeWorkers } from './workers';

declare function acquireVsCodeApi(): VsCodeApi<DashboardState>;
const vscode = acquireVsCodeApi();
const root = h('div', { id: 'root' });
document.body.append(root);

let run: Run | null = null;
let rows: RunMetrics[] = [];
let workers: RunWorkers | undefined;
const plots = new Map<string, uPlot>();

window.addEventListener('message', (ev: MessageEvent) => {
  const parsed = ToDashboard.safeParse(ev.data);
  if (!parsed.success) return;
  const msg = parsed.data;
  switch (msg.type) {
    case 'dashboard':
      if (run?.id !== msg.run.id) workers = undefined;
      run = msg.run;
      rows = msg.metrics;
      vscode.setState({ run_id: msg.run.id });
      render();
      break;
    case 'run':
      if (run && msg.run.id === run.id) {
        run = msg.run;
        renderHeader();
      }
      break;
    case 'workers':
      if (run && msg.workers.run_id === run.id) {
        workers = msg.workers;
        renderHeader();
      }
      break;
    case 'metrics':
      if (run && msg.metrics.run_id === run.id) {
        rows = upsertMetrics(rows, msg.metrics);
        // a chart that just got its first point (or a new metric key) needs a new plot
        if (chartSpecs(rows).some((s) => !plots.has(s.key) && seriesOf(rows, s.key)[0].length > 0)) render();
        else updatePlots();
      }
      break;
    case 'error':
      clear(root);
      root.append(
        h('p', { class: 'error' }, msg.message),
        h('button', { onclick: () => vscode.postMessage({ type: 'refresh' }) }, 'Retry'),
      );
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

function size(el: HTMLElement | null): { width: number; height: number } {
  return { width: Math.max(260, (el?.clientWidth ?? 380) - 12), height: 180 };
}

function renderHeader() {
  const header = document.getElementById('header');
  if (!header || !run) return;
  const r = run;
  clear(header);
  const steps = (r.config as { schedule?: { steps?: number } } | null)?.schedule?.steps;
  const parts: (Node | null)[] = [
    h('h1', {}, r.name),
    h('span', { class: 'badge', id: 'run-status' }, r.status),
    h('span', { id: 'run-step' }, `step ${r.step}${steps ? ` of ${steps}` : ''}`),
    h('span', {}, `model v${r.model_version}`),
    r.error ? h('span', { class: 'error' }, r.error) : null,
    r.status === 'running' || r.status === 'created'
      ? h('button', { onclick: () => vscode.postMessage({ type: 'stopRun', run_id: r.id }) }, 'Stop run')
      : null,
    h('button', { onclick: () => vscode.postMessage({ type: 'refresh' }) }, 'Refresh'),
  ];
  header.append(...parts.filter((p): p is Node => p !== null));
  renderWorkers(r);
}

/** Below the header: nothing runs the rollouts (waiting for a worker, the last one went away). */
function renderWorkers(r: Run) {
  document.getElementById('run-workers')?.remove();
  const note = r.status === 'running' ? describeWorkers(workers) : null;
  if (!note?.waiting) return;
  const [before, command] = note.command ? note.detail.split(/`([^`]*)`/) : [note.detail, null];
  document
    .getElementById('header')
    ?.after(
      h(
        'div',
        { id: 'run-workers', class: 'notice', role: 'status' },
        h('span', {}, before ?? ''),
        command ? h('code', {}, command) : null,
        command
          ? h(
              'button',
              { onclick: () => vscode.postMessage({ type: 'copy', what: 'worker command', text: command }) },
              'Copy',
            )
          : null,
      ),
    );
}

function render() {
  if (!run) return;
  for (const p of plots.values()) p.destroy();
  plots.clear();
  clear(root);
  root.append(h('header', { class: 'bar', id: 'header' }));
  renderHeader();
  const grid = h('div', { class: 'charts', id: 'charts' });
  root.append(grid);
  const palette = [
    '--vscode-charts-blue',
    '--vscode-charts-green',
    '--vscode-charts-orange',
    '--vscode-charts-purple',
    '--vscode-charts-red',
    '--vscode-charts-yellow',
  ];
  const fg = color('--vscode-foreground', '#ccc');
  const gridColor = color('--vscode-panel-border', '#8883');
  chartSpecs(rows).forEach((spec, i) => {
    const box = h(
      'div',
      { class: 'chart', 'data-key': spec.key },
      h('h3', {}, spec.title, h('span', { class: 'muted' }, ` (${spec.key})`)),
    );
    grid.append(box);
    const data = seriesOf(rows, spec.key);
    if (data[0].length === 0) {
      box.append(h('div', { class: 'empty muted' }, 'no data yet'));
      return;
    }
    const stroke = color(palette[i % palette.length], '#3794ff');
    const axis = {
      stroke: fg,
      grid: { stroke: gridColor, width: 1 },
      ticks: { stroke: gridColor, width: 1 },
    };
    const plot = new uPlot(
      {
        ...size(box),
        scales: { x: { time: false } },
        // steps are integers: no fractional ticks on x
        axes: [
          { ...axis, label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] },
          axis,
        ],
        series: [
          { label: 'step' },
          { label: spec.key, stroke, width: 2, points: { show: data[0].length < 50 } },
        ],
        legend: { show: true },
      },
      data as uPlot.AlignedData,
      box,
    );
    plots.set(spec.key, plot);
  });
  root.append(h('h2', {}, 'Run config'), h('pre', { id: 'config' }, JSON.stringify(run.config, null, 2)));
}

function updatePlots() {
  for (const [key, plot] of plots) plot.setData(seriesOf(rows, key) as uPlot.AlignedData);
}
