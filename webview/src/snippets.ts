// Recording snippets: how to point agents at the active recording, read-only, every code block
// with a Copy button. The recording key is masked on screen until "Show key"; copies hold it.
import './snippets.css';
import { clear, h } from './dom';
import { type Block, parseBlocks, parseInline } from './markdown';
import { ToSnippets, type VsCodeApi } from './protocol';

declare function acquireVsCodeApi(): VsCodeApi<never>;
const vscode = acquireVsCodeApi();
const root = h('div', { id: 'root' });
document.body.append(root);
const MASK = '••••••••';
let shown: Extract<ToSnippets, { type: 'snippets' }> | null = null;
let reveal = false;

window.addEventListener('message', (ev: MessageEvent) => {
  const parsed = ToSnippets.safeParse(ev.data);
  if (!parsed.success) return;
  const msg = parsed.data;
  if (msg.type === 'error') {
    clear(root);
    root.append(h('p', { class: 'muted' }, msg.message));
    return;
  }
  shown = msg;
  render();
});
vscode.postMessage({ type: 'ready' });

function render() {
  if (!shown) return;
  const s = shown;
  const masked = (text: string) => (reveal || !s.key ? text : text.split(s.key).join(MASK));
  clear(root);
  root.append(
    h(
      'header',
      { class: 'bar' },
      h('h1', {}, `Recording snippets: ${s.recording}`),
      h(
        'button',
        {
          id: 'reveal',
          'aria-pressed': String(reveal),
          onclick: () => {
            reveal = !reveal;
            render();
            document.getElementById('reveal')?.focus();
          },
        },
        reveal ? 'Hide key' : 'Show key',
      ),
      h(
        'button',
        { onclick: () => vscode.postMessage({ type: 'copy', what: 'the recording key', text: s.key }) },
        'Copy key',
      ),
    ),
  );
  let section = '';
  for (const b of parseBlocks(s.markdown)) {
    if (b.kind === 'heading' && b.level === 1) continue; // the header says it
    if (b.kind === 'heading') section = b.text;
    root.append(blockEl(b, section, masked));
  }
}

function blockEl(b: Block, section: string, masked: (t: string) => string): HTMLElement {
  if (b.kind === 'heading') return h(b.level <= 2 ? 'h2' : 'h3', {}, b.text);
  if (b.kind === 'paragraph')
    return h(
      'p',
      {},
      parseInline(b.text).map((i) =>
        i.kind === 'code'
          ? h('code', {}, masked(i.text))
          : i.kind === 'strong'
            ? h('strong', {}, i.text)
            : masked(i.text),
      ),
    );
  const what = section ? `the ${section} snippet` : `the ${b.lang || 'shell'} snippet`;
  return h(
    'div',
    { class: 'snippet' },
    h('pre', {}, h('code', {}, masked(b.text))),
    h(
      'button',
      {
        class: 'copy',
        'aria-label': `Copy ${what}`,
        onclick: () => vscode.postMessage({ type: 'copy', what, text: b.text }),
      },
      'Copy',
    ),
  );
}
