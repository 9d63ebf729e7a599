// Trajectory viewer: the conversation of a rollout (every llm call with timing, model version,
// wire API, status, and the tool runs its harness reported between them) and the training view
// (merged samples token by token: loss mask, logprob heat map, advantage, prefix breaks with their
// diagnosis). Messages follow protocol.ts.
import './trajectory.css';
import type { LlmCall, ToolRun } from '../../daemon/protocol/entities';
import { type Entry, newRequestEntries, responseEntries } from './conversation';
import { callAsCurl, callAsJson } from './curl';
import { clear, h, highlight } from './dom';
import { errorPage } from './errorPage';
import { count, formatNumber, signed, statusClass } from './format';
import { ToTrajectory, type TrajectoryData, type TrajectoryState, type VsCodeApi } from './protocol';
import { samplingLine, samplingTitle } from './sampling';
import { showTokenDetails, tokenLine } from './tokenLine';
import { breakDiagnosis, type SampleView, summarize, tokenView } from './tokens';
import { placeToolRuns, toolRunLine } from './toolRuns';

declare function acquireVsCodeApi(): VsCodeApi<TrajectoryState & { tab?: Tab }>;
type Tab = 'conversation' | 'training';

const vscode = acquireVsCodeApi();
const root = h('div', { id: 'root' });
document.body.append(root);
let data: TrajectoryData | null = null;
let tab: Tab = vscode.getState()?.tab ?? 'conversation';
let marks: HTMLElement[] = [];
let current = -1;

window.addEventListener('message', (ev: MessageEvent) => {
  const parsed = ToTrajectory.safeParse(ev.data);
  if (!parsed.success) {
    renderError(`bad message from the extension: ${parsed.error.issues[0]?.message ?? ''}`, false);
    return;
  }
  const msg = parsed.data;
  if (msg.type === 'loading') {
    clear(root);
    root.append(h('p', { class: 'muted' }, `Loading rollout ${msg.rollout_id}…`));
  } else if (msg.type === 'error') renderError(msg.message, msg.daemon_stopped);
  else {
    data = msg;
    vscode.setState({ rollout_id: msg.rollout.id, focus_call_id: msg.focus_call_id, tab });
    render();
  }
});
vscode.postMessage({ type: 'ready' });

function renderError(message: string, daemonStopped: boolean) {
  clear(root);
  root.append(...errorPage(message, daemonStopped, (m) => vscode.postMessage(m)));
}

function render() {
  if (!data) return;
  const d = data;
  const r = d.rollout;
  clear(root);
  const search = h('input', {
    type: 'search',
    placeholder: 'Search trajectory',
    id: 'search',
    'aria-label': 'Search trajectory',
  });
  const hits = h('span', { class: 'muted', id: 'search-count' });
  search.addEventListener('input', () => runSearch(search.value, hits));
  search.addEventListener('keydown', (e) => {
    if ((e as KeyboardEvent).key === 'Enter') step((e as KeyboardEvent).shiftKey ? -1 : 1, hits);
  });
  const tabButton = (t: Tab, label: string) =>
    h('button', { class: tab === t ? 'active' : '', 'data-tab': t, onclick: () => switchTab(t) }, label);
  root.append(
    h(
      'header',
      { class: 'bar' },
      h('h1', {}, `Rollout ${r.id}`),
      h(
        'div',
        { class: 'tabs' },
        tabButton('conversation', 'Conversation'),
        tabButton('training', 'Training'),
      ),
      search,
      hits,
      h('button', { onclick: () => vscode.postMessage({ type: 'refresh' }) }, 'Refresh'),
    ),
  );
  // Each reward with its source; what the giver attached (e.g. a verifier's test results) on hover.
  const rewards = r.rewards.map((w, i) =>
    h(
      'span',
      { class: 'reward', title: w.detail == null ? undefined : JSON.stringify(w.detail, null, 2) },
      `${i > 0 ? ', ' : ''}${formatNumber(w.value)} (${w.source})`,
    ),
  );
  // the header and the Training tab count trained tokens from the same merged samples
  const views = trainingViews(d);
  const s = summarize(views);
  root.append(
    h(
      'div',
      { class: 'summary' },
      h('span', {}, h('span', { class: 'badge' }, r.status), ` ${r.kind}`),
      h('span', { id: 'reward' }, `reward ${formatNumber(r.reward)}`),
      rewards.length > 0 && h('span', { class: 'muted' }, 'rewards: ', rewards),
      h(
        'span',
        {},
        `${count(r.attempts.length, 'attempt')} · ${count(r.llm_calls.length, 'llm call')}${r.tool_runs.length > 0 ? ` · ${count(r.tool_runs.length, 'tool run')}` : ''}`,
      ),
      r.kind === 'recording' &&
        r.llm_calls.some((c) => c.status === 'ok') &&
        r.llm_calls.every((c) => c.status !== 'ok' || c.token_source === 'text') &&
        h('span', { class: 'muted', id: 'text-only' }, 'text only: provider pass-through (no token ids)'),
      views.length > 0 &&
        h(
          'span',
          { id: 'sample-counts' },
          `${count(s.samples, 'sample')} · ${count(s.breaks, 'prefix break')} · ${count(s.maskTokens, 'trained token')}`,
        ),
      r.error && h('span', { class: 'error' }, r.error),
    ),
  );
  const body = h('div', { id: 'body' });
  root.append(body);
  if (tab === 'conversation') renderConversation(body, d);
  else renderTraining(body, d, views);
  if (search.value) runSearch(search.value, hits);
  if (d.focus_call_id && tab === 'conversation') {
    document.getElementById(`call-${d.focus_call_id}`)?.scrollIntoView({ block: 'start' });
  }
}

function switchTab(t: Tab) {
  tab = t;
  if (data) vscode.setState({ rollout_id: data.rollout.id, focus_call_id: data.focus_call_id, tab });
  render();
}

function entryEl(e: Entry, response: boolean): HTMLElement {
  const roleText =
    e.kind === 'tool_call'
      ? `${e.role} → ${e.name}`
      : e.kind === 'tool_result'
        ? `tool result ${e.name ?? ''}`
        : e.kind === 'thinking'
          ? `${e.role} thinking`
          : e.role;
  return h(
    'div',
    { class: `entry ${e.role} ${e.kind}${response ? ' response' : ''}` },
    h('span', { class: 'role' }, roleText),
    e.kind === 'text' && e.text === ''
      ? h('pre', { class: 'muted empty-turn' }, '(empty: no text, no tool calls)')
      : h('pre', {}, e.text),
  );
}

function callHead(c: LlmCall, proxyBase: string): HTMLElement {
  const timing = [
    c.queue_ms !== null ? `queue ${Math.round(c.queue_ms)} ms` : null,
    c.ttft_ms !== null ? `ttft ${Math.round(c.ttft_ms)} ms` : null,
    c.total_ms !== null ? `total ${Math.round(c.total_ms)} ms` : null,
  ].filter(Boolean);
  const tokens = `${c.prompt_ids?.length ?? c.usage?.prompt_tokens ?? '?'} + ${c.response_ids?.length ?? c.usage?.completion_tokens ?? '?'} tokens (${c.token_source})`;
  return h(
    'div',
    { class: 'head' },
    h('strong', {}, `#${c.seq}`),
    h('span', { class: 'badge' }, c.wire_api),
    h('span', {}, c.model ?? ''),
    c.model_version !== null && h('span', {}, `model v${c.model_version}`),
    h('span', { class: statusClass(c.status) }, c.status + (c.http_status ? ` ${c.http_status}` : '')),
    h('span', { class: 'muted' }, timing.join(' · ')),
    h('span', { class: 'muted' }, tokens),
    c.finish_reason && h('span', { class: 'muted' }, `finish ${c.finish_reason}`),
    c.sampling && h('span', { class: 'muted', title: samplingTitle(c.sampling) }, samplingLine(c.sampling)),
    c.stream && h('span', { class: 'muted' }, 'stream'),
    h('span', { class: 'spacer' }),
    h(
      'button',
      {
        title: 'Copy as curl',
        onclick: () =>
          vscode.postMessage({ type: 'copy', what: 'the call as curl', text: callAsCurl(c, proxyBase) }),
      },
      'curl',
    ),
    h(
      'button',
      {
        title: 'Copy as JSON',
        onclick: () => vscode.postMessage({ type: 'copy', what: 'the call as JSON', text: callAsJson(c) }),
      },
      'JSON',
    ),
  );
}

function renderConversation(body: HTMLElement, d: TrajectoryData) {
  const calls = [...d.rollout.llm_calls].sort((a, b) => a.seq - b.seq);
  if (calls.length === 0) body.append(h('p', { class: 'muted' }, 'No llm calls recorded yet.'));
  const fresh = newRequestEntries(calls);
  const tools = placeToolRuns(calls, d.rollout.tool_runs);
  for (const t of tools.before) body.append(toolRunEl(t));
  calls.forEach((c, i) => {
    const card = h('section', {
      class: `call${c.id === d.focus_call_id ? ' focus' : ''}`,
      id: `call-${c.id}`,
    });
    card.append(callHead(c, d.proxy_base_url));
    for (const e of fresh[i]) card.append(entryEl(e, false));
    for (const e of responseEntries(c)) card.append(entryEl(e, true));
    if (c.error) card.append(h('div', { class: `entry ${statusClass(c.status)}` }, h('pre', {}, c.error)));
    body.append(card);
    for (const t of tools.after[i]) body.append(toolRunEl(t));
  });
}

/** A tool execution the harness reported (its own telemetry), between the calls it ran between. */
function toolRunEl(t: ToolRun): HTMLElement {
  const title = [
    `${t.source}${t.agent ? ` from ${t.agent}` : ''}, started ${t.started_at}`,
    t.call_id && `tool call ${t.call_id}`,
    Object.keys(t.attributes).length > 0 && JSON.stringify(t.attributes, null, 2),
  ]
    .filter(Boolean)
    .join('\n');
  return h(
    'div',
    { class: `tool-run${t.success === false ? ' failed' : ''}`, title },
    h('span', { class: 'role' }, 'tool run'),
    h('span', {}, toolRunLine(t)),
    t.error && h('span', { class: 'error' }, t.error),
  );
}

function trainingViews(d: TrajectoryData): SampleView[] {
  const calls = [...d.rollout.llm_calls].sort((a, b) => a.seq - b.seq);
  return tokenView(
    calls,
    d.rollout.prefix_breaks,
    d.samples?.filter((s) => s.rollout_id === d.rollout.id) ?? null,
    d.token_texts,
  );
}

function renderTraining(body: HTMLElement, d: TrajectoryData, views: SampleView[]) {
  const s = summarize(views);
  body.append(
    h(
      'div',
      { class: 'legend', id: 'token-legend' },
      views.length > 0 && h('span', {}, count(s.tokens, 'token')),
      s.meanLogprob !== null && h('span', {}, `mean logprob ${formatNumber(s.meanLogprob)}`),
      h(
        'span',
        {},
        h('span', { class: 'tok m0' }, 'prompt'),
        ' mask 0 ',
        h('span', { class: 'tok m1' }, 'response'),
        ' mask 1',
      ),
      h('span', {}, 'logprob: likely ', h('span', { class: 'swatch' }), ' unlikely'),
      h(
        'span',
        {},
        h('span', { class: 'tok adv-pos' }, '+A'),
        ' solid underline / ',
        h('span', { class: 'tok adv-neg' }, '−A'),
        ' dashed underline: advantage',
      ),
      d.samples ? null : h('span', { class: 'muted' }, 'advantages appear once the group is complete'),
    ),
  );
  if (views.length === 0)
    body.append(
      h(
        'p',
        { class: 'muted', id: 'no-tokens' },
        d.rollout.llm_calls.length === 0
          ? 'No calls yet: the tokens appear here once the agent makes an llm call.'
          : 'No token ids recorded for this rollout (text-only calls).',
      ),
    );
  for (const v of views) body.append(sampleEl(v));
  if (views.length > 0) body.append(showTokenDetails());
}

function sampleEl(v: SampleView): HTMLElement {
  const wrap = h('div', { class: 'sample', 'data-sample': v.index });
  if (v.breakBefore) {
    const b = v.breakBefore;
    wrap.append(
      h(
        'div',
        { class: 'break', 'data-break-class': b.class },
        h(
          'div',
          {},
          h('span', { class: 'cls' }, `Prefix break (${b.class})`),
          ` at call ${b.call_index}, token ${b.position}`,
        ),
        h('div', {}, breakDiagnosis(b)),
        h('div', { class: 'muted' }, 'expected: ', h('code', {}, b.expected_text ?? b.expected.join(' '))),
        h('div', { class: 'muted' }, 'actual: ', h('code', {}, b.actual_text ?? b.actual.join(' '))),
      ),
    );
  }
  const adv = v.tokens.find((t) => t.advantage !== null)?.advantage;
  wrap.append(
    h(
      'h2',
      {},
      `Sample ${v.index}`,
      h(
        'span',
        { class: 'muted' },
        ` — ${v.calls.length === 1 ? 'call' : 'calls'} ${v.calls.join(', ')} · ${count(v.tokens.length, 'token')}${adv !== undefined && adv !== null ? ` · advantage ${signed(adv)}` : ''}`,
      ),
    ),
  );
  wrap.append(tokenLine(v));
  return wrap;
}

function runSearch(q: string, hits: HTMLElement) {
  const body = document.getElementById('body');
  if (!body) return;
  marks = highlight(body, q);
  current = -1;
  if (marks.length) step(1, hits);
  else hits.textContent = q ? 'no matches' : '';
}

function step(dir: number, hits: HTMLElement) {
  if (!marks.length) return;
  marks[current]?.classList.remove('current');
  current = (current + dir + marks.length) % marks.length;
  marks[current].classList.add('current');
  marks[current].scrollIntoView({ block: 'center' });
  hits.textContent = `${current + 1} of ${marks.length}`;
}
