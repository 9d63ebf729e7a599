// Tiny DOM helpers for the webviews (no framework; text always goes through textContent).
export type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined | ((e: Event) => void)> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (k === 'class') el.className = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return el;
}

export function clear(el: Element): void {
  while (el.firstChild) el.firstChild.remove();
}

/** Highlights every match of `query` in text nodes under `root` with <mark>; returns the marks. */
export function highlight(root: Element, query: string): HTMLElement[] {
  for (const m of Array.from(root.querySelectorAll('mark.search-hit'))) {
    m.replaceWith(document.createTextNode(m.textContent ?? ''));
  }
  root.normalize();
  if (!query) return [];
  const q = query.toLowerCase();
  const marks: HTMLElement[] = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n as Text);
  for (const node of nodes) {
    const text = node.data;
    let i = text.toLowerCase().indexOf(q);
    if (i < 0) continue;
    const frag = document.createDocumentFragment();
    let last = 0;
    while (i >= 0) {
      frag.append(text.slice(last, i));
      const mark = document.createElement('mark');
      mark.className = 'search-hit';
      mark.textContent = text.slice(i, i + q.length);
      frag.append(mark);
      marks.push(mark);
      last = i + q.length;
      i = text.toLowerCase().indexOf(q, last);
    }
    frag.append(text.slice(last));
    node.replaceWith(frag);
  }
  return marks;
}
