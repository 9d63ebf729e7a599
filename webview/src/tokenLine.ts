// One sample's tokens as a line that reads with the mouse or the keyboard: Tab reaches the line,
// ←/→/Home/End move a cursor token, and the details panel (a live region) says what the token
// under the cursor or the mouse is. Colour is never the only cue: advantage sign is also a solid
// vs dashed underline and is spelled out in the panel.
import { clear, h } from './dom';
import { formatNumber, signed } from './format';
import { heat, type SampleView, type TokenCell, tokenLabel } from './tokens';

interface Placed {
  cell: TokenCell;
  index: number;
  sample: number;
}
const placed = new WeakMap<Element, Placed>();
const DETAILS_ID = 'token-details';

export function tokenLine(v: SampleView): HTMLElement {
  const line = h('div', {
    class: 'tokens',
    tabindex: 0,
    role: 'group',
    'aria-label': `Sample ${v.index} tokens; arrow keys move between tokens, details below`,
  });
  const frag = document.createDocumentFragment();
  let prevCall = -1;
  v.tokens.forEach((t, i) => {
    const cls = ['tok', `m${t.mask}`];
    if (t.call !== prevCall) cls.push('callstart');
    prevCall = t.call;
    if (t.advantage !== null && t.advantage > 0) cls.push('adv-pos');
    if (t.advantage !== null && t.advantage < 0) cls.push('adv-neg');
    const span = document.createElement('span');
    span.className = cls.join(' ');
    span.textContent = tokenLabel(t);
    const hv = heat(t.logprob);
    if (t.mask && hv !== null) {
      // the stylesheet turns --heat into a background light enough for AA contrast
      span.style.setProperty('--heat', String(hv / 100));
      span.dataset.heat = String(hv);
    }
    placed.set(span, { cell: t, index: i, sample: v.index });
    // lines wrap between tokens (a <wbr>), not inside one
    if (i > 0) frag.append(document.createElement('wbr'));
    frag.append(span);
  });
  line.append(frag);
  line.addEventListener('mouseover', (e) => {
    const tok = (e.target as Element).closest('.tok');
    if (tok) describe(tok);
  });
  line.addEventListener('click', (e) => {
    const tok = (e.target as Element).closest('.tok');
    if (tok) moveCursor(line, tok);
  });
  line.addEventListener('focus', () => {
    const tok = line.querySelector('.tok.cursor') ?? line.querySelector('.tok');
    if (tok) moveCursor(line, tok);
  });
  line.addEventListener('keydown', (e) => {
    const toks = line.querySelectorAll('.tok');
    const at = Array.prototype.indexOf.call(toks, line.querySelector('.tok.cursor'));
    const next =
      e.key === 'ArrowRight'
        ? at + 1
        : e.key === 'ArrowLeft'
          ? at - 1
          : e.key === 'Home'
            ? 0
            : e.key === 'End'
              ? toks.length - 1
              : null;
    if (next === null) return;
    e.preventDefault();
    moveCursor(line, toks[Math.max(0, Math.min(toks.length - 1, next))]);
  });
  return line;
}

/** The panel under the samples that describes one token; empty until a token is pointed at. */
export function showTokenDetails(): HTMLElement {
  return h(
    'div',
    { id: DETAILS_ID, role: 'status', 'aria-live': 'polite' },
    h(
      'span',
      { class: 'muted' },
      'Point at a token, or Tab to a sample and use the arrow keys, for its details.',
    ),
  );
}

function moveCursor(line: Element, tok: Element) {
  for (const c of Array.from(line.ownerDocument.querySelectorAll('.tok.cursor')))
    c.classList.remove('cursor');
  tok.classList.add('cursor');
  tok.scrollIntoView({ block: 'nearest' });
  describe(tok);
}

function describe(tok: Element) {
  const p = placed.get(tok);
  const panel = document.getElementById(DETAILS_ID);
  if (!p || !panel) return;
  const t = p.cell;
  const rows: [string, string][] = [
    ['token', `#${p.index} of sample ${p.sample}`],
    ['text', t.text === null ? '(not decoded)' : JSON.stringify(t.text)],
    ['id', String(t.id)],
    ['call', String(t.call)],
    ['loss mask', t.mask ? '1 (trained)' : '0 (prompt, not trained)'],
  ];
  if (t.logprob !== null)
    rows.push([
      'logprob',
      `${formatNumber(t.logprob, 4)} (probability ${formatNumber(Math.exp(t.logprob))})`,
    ]);
  if (t.advantage !== null)
    rows.push([
      'advantage',
      `${signed(t.advantage)} (${t.advantage > 0 ? 'positive' : t.advantage < 0 ? 'negative' : 'zero'})`,
    ]);
  clear(panel);
  panel.append(
    h(
      'table',
      { class: 'kv' },
      rows.map(([k, v]) => h('tr', {}, h('td', { class: 'muted' }, k), h('td', {}, v))),
    ),
  );
}
