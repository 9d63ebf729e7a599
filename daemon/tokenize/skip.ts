// A chat template rendered from one message on: its loop over `messages` skips the iterations before
// it, when the template's AST proves an iteration has no effect but its own text (no namespace
// attribute set, no break, no macro or call whose effects are unknown, no variable read before this
// iteration sets it: @huggingface/jinja keeps one scope for all of a loop's iterations). Then the
// rendering is the full one with the skipped iterations' text left out: what comes before the loop and
// every later iteration are evaluated exactly as in the full rendering, and the loop still walks every
// message (loop.index0, loop.last and the neighbours are the same). A boundary text marks where the
// first kept iteration starts, so the caller gets exactly the full rendering's text from there on.
import { parse, Template, tokenize } from '@huggingface/jinja';

/** Written where the first kept iteration starts; a rendering with it anywhere else is not trusted. */
export const BOUNDARY = 'TITO_BOUNDARY_5d07a9';
/** The prefix of the names the rendering adds (a template that holds it is not skipped). */
const FROM = '__tito_render_from';
/** The function an iteration asks whether it is kept (counting the iterations). */
const KEEP = `${FROM}_keep`;
/** The function that writes the boundary in the first kept iteration. */
const MARK = `${FROM}_mark`;

// biome-ignore lint/suspicious/noExplicitAny: the library's AST nodes, walked by their type
type Node = any;

/** Methods of @huggingface/jinja's strings, objects and arrays that only compute a value. */
const PURE_METHODS = new Set([
  'upper',
  'lower',
  'title',
  'capitalize',
  'strip',
  'lstrip',
  'rstrip',
  'split',
  'startswith',
  'endswith',
  'replace',
  'join',
  'count',
  'find',
  'format',
  'get',
  'items',
  'keys',
  'values',
]);
/** Global functions a skipped iteration may call (they only compute a value). */
const PURE_FUNCTIONS = new Set(['range', 'namespace']);

/** The names a loop variable or a set binds (null: something else is assigned). */
function boundNames(target: Node): string[] | null {
  if (target?.type === 'Identifier') return [target.value];
  if (target?.type === 'TupleLiteral' && target.value.every((t: Node) => t?.type === 'Identifier'))
    return target.value.map((t: Node) => t.value);
  return null;
}

/** Names `body` sets at its own scope (not inside a nested loop, which has its own). */
function setAtScope(body: Node[], out: Set<string>): boolean {
  for (const s of body) {
    if (s.type === 'Set') {
      const names = boundNames(s.assignee);
      if (!names) return false; // a namespace attribute: an effect past the iteration
      for (const n of names) out.add(n);
    } else if (s.type === 'If') {
      if (!setAtScope(s.body, out) || !setAtScope(s.alternate, out)) return false;
    } else if (s.type === 'FilterStatement' && !setAtScope(s.body, out)) return false;
  }
  return true;
}

/**
 * Whether one iteration of a loop body is pure: it reads no name of `stale` (set at the loop's scope,
 * so left over from the iteration before) before setting it, and has no effect but its text.
 * `assigned` (changed in place): the names set on every path so far.
 */
class PureBody {
  constructor(private readonly stale: Set<string>) {}

  block(body: Node[], assigned: Set<string>): boolean {
    for (const s of body) if (!this.statement(s, assigned)) return false;
    return true;
  }

  private statement(s: Node, assigned: Set<string>): boolean {
    switch (s.type) {
      case 'Comment':
      case 'Continue':
        return true;
      case 'If': {
        if (!this.expr(s.test, assigned)) return false;
        const a = new Set(assigned);
        const b = new Set(assigned);
        if (!this.block(s.body, a) || !this.block(s.alternate, b)) return false;
        for (const n of a) if (b.has(n)) assigned.add(n);
        return true;
      }
      case 'Set': {
        const names = boundNames(s.assignee);
        if (!names) return false;
        if (s.value ? !this.expr(s.value, assigned) : !this.block(s.body, new Set(assigned))) return false;
        for (const n of names) assigned.add(n);
        return true;
      }
      case 'For': {
        // its own scope: what it sets stays in it (and is fresh each time the loop starts)
        const loopvar = boundNames(s.loopvar);
        if (!loopvar) return false;
        const iterable = s.iterable.type === 'SelectExpression' ? s.iterable.lhs : s.iterable;
        if (!this.expr(iterable, assigned)) return false;
        const inner = new Set([...assigned, ...loopvar, 'loop']);
        if (s.iterable.type === 'SelectExpression' && !this.expr(s.iterable.test, new Set(inner)))
          return false;
        const set = new Set<string>();
        if (!setAtScope(s.body, set)) return false;
        // a name the nested loop sets is its own once set; before that it may read the outer one
        const nested = new PureBody(new Set([...this.stale, ...set]));
        return nested.block(s.body, new Set(inner)) && this.block(s.defaultBlock, new Set(assigned));
      }
      case 'FilterStatement':
        return this.filter(s.filter, assigned) && this.block(s.body, assigned);
      default:
        // Break, Macro, CallStatement and anything unknown: not provably free of effects
        return s.type.endsWith('Expression') || s.type.endsWith('Literal') || s.type === 'Identifier'
          ? this.expr(s, assigned)
          : false;
    }
  }

  private filter(f: Node, assigned: Set<string>): boolean {
    if (f.type === 'Identifier') return true;
    return f.type === 'CallExpression' && f.args.every((a: Node) => this.expr(a, assigned));
  }

  private expr(e: Node, assigned: Set<string>): boolean {
    if (e == null) return true;
    switch (e.type) {
      case 'Identifier':
        return !this.stale.has(e.value) || assigned.has(e.value);
      case 'StringLiteral':
      case 'IntegerLiteral':
      case 'FloatLiteral':
        return true;
      case 'ArrayLiteral':
      case 'TupleLiteral':
        return e.value.every((x: Node) => this.expr(x, assigned));
      case 'ObjectLiteral':
        for (const [k, v] of e.value as Map<Node, Node>)
          if (!this.expr(k, assigned) || !this.expr(v, assigned)) return false;
        return true;
      case 'MemberExpression':
        return this.expr(e.object, assigned) && (!e.computed || this.expr(e.property, assigned));
      case 'CallExpression': {
        const c = e.callee;
        const pure =
          (c.type === 'Identifier' && PURE_FUNCTIONS.has(c.value)) ||
          (c.type === 'MemberExpression' &&
            !c.computed &&
            PURE_METHODS.has(c.property.value) &&
            this.expr(c.object, assigned));
        return pure && e.args.every((a: Node) => this.expr(a, assigned));
      }
      case 'KeywordArgumentExpression':
        return this.expr(e.value, assigned);
      case 'SpreadExpression':
      case 'KeywordSpreadExpression':
      case 'UnaryExpression':
        return this.expr(e.argument, assigned);
      case 'BinaryExpression':
        return this.expr(e.left, assigned) && this.expr(e.right, assigned);
      case 'FilterExpression':
        return this.expr(e.operand, assigned) && this.filter(e.filter, assigned);
      case 'TestExpression':
        return this.expr(e.operand, assigned);
      case 'Ternary':
        return (
          this.expr(e.condition, assigned) &&
          this.expr(e.trueExpr, assigned) &&
          this.expr(e.falseExpr, assigned)
        );
      case 'SliceExpression':
        return this.expr(e.start, assigned) && this.expr(e.stop, assigned) && this.expr(e.step, assigned);
      default:
        return false;
    }
  }
}

/** Whether any statement anywhere in `body` (nested too) rebinds `messages`. */
function rebindsMessages(body: Node[]): boolean {
  const walk = (n: Node): boolean => {
    if (!n || typeof n !== 'object') return false;
    if (Array.isArray(n)) return n.some(walk);
    if ((n.type === 'Set' && boundNames(n.assignee)?.includes('messages')) || n.type === 'Macro') return true;
    if (n.type === 'For' && boundNames(n.loopvar)?.includes('messages')) return true;
    return Object.values(n).some((v) => typeof v === 'object' && walk(v));
  };
  return body.some(walk);
}

/**
 * The template `source` compiled to render from a given message on (`render`), or null when its
 * loop over `messages` cannot be proven to skip safely (then only a full rendering is exact).
 */
export function fromMessageTemplate(source: string): Template | null {
  if (source.includes(BOUNDARY) || source.includes(FROM)) return null;
  const template = new Template(source);
  const body: Node[] = (template as unknown as { parsed: { body: Node[] } }).parsed.body;
  if (rebindsMessages(body)) return null;
  const loops = body.filter(
    (s) =>
      s.type === 'For' &&
      s.iterable.type === 'Identifier' &&
      s.iterable.value === 'messages' &&
      s.loopvar.type === 'Identifier',
  );
  if (loops.length !== 1) return null;
  const loop = loops[0];
  if (loop.defaultBlock.length) return null;
  const stale = new Set<string>();
  if (!setAtScope(loop.body, stale)) return null;
  if (!new PureBody(stale).block(loop.body, new Set([loop.loopvar.value, 'loop']))) return null;
  // Each iteration first asks a function of the rendering's own (renderFrom) whether it is kept, and
  // the first kept one writes the boundary: one call per skipped iteration, where a counter in a
  // namespace took a set and two comparisons (jinja's value objects each), and loop.index0 builds the
  // loop's nine values. Asked first, so a `continue` in the body cannot skip the count.
  const guard = `{% for _ in [] %}{% if ${KEEP}() %}{{ ${MARK}() }}{% endif %}{% endfor %}`;
  const [shape] = parse(tokenize(guard, { lstrip_blocks: true, trim_blocks: true })).body as Node[];
  const [skip] = shape.body as Node[];
  skip.body.push(...loop.body);
  loop.body = [skip];
  return template;
}

/**
 * `template`'s text from the iteration of message `from` on (fromMessageTemplate), with `items` as
 * Template.render takes them; null when the boundary is not there exactly once.
 */
export function renderFrom(template: Template, items: Record<string, unknown>, from: number): string | null {
  let i = 0;
  const text = template.render({
    ...items,
    [KEEP]: () => ++i > from,
    [MARK]: () => (i === from + 1 ? BOUNDARY : ''),
  });
  const at = text.indexOf(BOUNDARY);
  if (at < 0 || text.indexOf(BOUNDARY, at + 1) >= 0) return null;
  return text.slice(at + BOUNDARY.length);
}
