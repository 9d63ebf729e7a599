// Bug injection at the syntax-tree level: tree-sitter parses a source file (the .wasm grammars of
// tree-sitter-python and tree-sitter-typescript, loaded by web-tree-sitter; nothing native is built)
// and each operator below proposes edits of one node: a comparison or boolean operator flipped, an
// off-by-one, a statement or return removed, two arguments swapped, a condition negated, a constant
// changed. A mutant is one such edit; mutants that give the same text are one.
import { createRequire } from 'node:module';
import { Language, type Node, Parser } from 'web-tree-sitter';

export type Lang = 'python' | 'typescript';

export const OPERATORS = [
  'compare',
  'boolean',
  'off-by-one',
  'arithmetic',
  'remove-statement',
  'swap-arguments',
  'negate-condition',
  'constant',
] as const;
export type Operator = (typeof OPERATORS)[number];

export interface Mutant {
  /** Repository-relative path of the mutated file. */
  file: string;
  operator: Operator;
  /** 1-based line of the edit. */
  line: number;
  /** The edit, in UTF-16 offsets of the file's text. */
  start: number;
  end: number;
  replacement: string;
  /** What changed, e.g. `< → <=`. */
  description: string;
}

const require = createRequire(import.meta.url);
const grammarFile: Record<Lang | 'tsx', string> = {
  python: 'tree-sitter-python/tree-sitter-python.wasm',
  typescript: 'tree-sitter-typescript/tree-sitter-typescript.wasm',
  tsx: 'tree-sitter-typescript/tree-sitter-tsx.wasm',
};
const languages = new Map<string, Promise<Language>>();

async function parserFor(file: string, lang: Lang): Promise<Parser> {
  const grammar = lang === 'typescript' && file.endsWith('.tsx') ? 'tsx' : lang;
  let language = languages.get(grammar);
  if (!language) {
    language = Parser.init().then(() => Language.load(require.resolve(grammarFile[grammar])));
    languages.set(grammar, language);
  }
  const loaded = await language;
  const parser = new Parser();
  parser.setLanguage(loaded);
  return parser;
}

const FLIP_COMPARE: Record<string, string[]> = {
  '<': ['<=', '>='],
  '<=': ['<', '>'],
  '>': ['>=', '<='],
  '>=': ['>', '<'],
  '==': ['!='],
  '!=': ['=='],
  '===': ['!=='],
  '!==': ['==='],
  in: ['not in'],
  is: ['is not'],
};
const FLIP_BOOLEAN: Record<string, string> = { and: 'or', or: 'and', '&&': '||', '||': '&&' };
const FLIP_ARITH: Record<string, string> = { '+': '-', '-': '+', '*': '/', '//': '*' };

type Edit = Omit<Mutant, 'file' | 'line'> & { node: Node };
const edit = (node: Node, operator: Operator, replacement: string, description: string, at = node): Edit => ({
  node,
  operator,
  start: at.startIndex,
  end: at.endIndex,
  replacement,
  description,
});

/** The operator token of a binary node (python: comparison/boolean/binary operator; ts: binary_expression). */
function operatorToken(node: Node): Node | undefined {
  const field = node.childForFieldName('operator');
  if (field) return field;
  return node.children.find((c) => c !== null && !c.isNamed) ?? undefined;
}

function binaryEdits(node: Node): Edit[] {
  const op = operatorToken(node);
  if (!op) return [];
  const out: Edit[] = [];
  for (const to of FLIP_COMPARE[op.text] ?? []) out.push(edit(node, 'compare', to, `${op.text} → ${to}`, op));
  const bool = FLIP_BOOLEAN[op.text];
  if (bool) out.push(edit(node, 'boolean', bool, `${op.text} → ${bool}`, op));
  const arith = FLIP_ARITH[op.text];
  // `a + b` of strings is concatenation: only flip when one side is a number
  const numeric = node.namedChildren.some((c) => c?.type === 'integer' || c?.type === 'number');
  if (arith && numeric) out.push(edit(node, 'arithmetic', arith, `${op.text} → ${arith}`, op));
  return out;
}

function isStatementList(node: Node | null): boolean {
  return node?.type === 'block' || node?.type === 'statement_block';
}

function statementEdits(node: Node, lang: Lang): Edit[] {
  if (!isStatementList(node.parent)) return [];
  // a lone docstring or string statement is no behaviour
  if (node.namedChildren[0]?.type === 'string') return [];
  const what = node.type === 'return_statement' ? 'return removed' : 'statement removed';
  return [edit(node, 'remove-statement', lang === 'python' ? 'pass' : ';', `${what}: ${oneLine(node.text)}`)];
}

function callEdits(node: Node): Edit[] {
  const args = node.childForFieldName('arguments');
  const list = (args?.namedChildren ?? []).filter((c): c is Node => c !== null && c.type !== 'comment');
  const out: Edit[] = [];
  if (list.length === 2 && list.every((a) => !a.type.includes('keyword') && !a.type.includes('splat'))) {
    const [a, b] = list as [Node, Node];
    if (a.text !== b.text) {
      const between = node.tree.rootNode.text.slice(a.endIndex, b.startIndex);
      out.push({
        ...edit(
          node,
          'swap-arguments',
          `${b.text}${between}${a.text}`,
          `arguments swapped: ${oneLine(args!.text)}`,
        ),
        start: a.startIndex,
        end: b.endIndex,
      });
    }
  }
  // range(a, b): the end one further or one short
  const fn = node.childForFieldName('function');
  if (fn?.text === 'range' && list.length >= 1 && list.length <= 2) {
    const last = list.at(-1)!;
    out.push(edit(node, 'off-by-one', `${last.text} + 1`, `range end ${last.text} → ${last.text} + 1`, last));
    out.push(edit(node, 'off-by-one', `${last.text} - 1`, `range end ${last.text} → ${last.text} - 1`, last));
  }
  return out;
}

function conditionEdits(node: Node, lang: Lang): Edit[] {
  const cond = node.childForFieldName('condition');
  if (!cond) return [];
  const negated = lang === 'python' ? `not (${cond.text})` : `(!${cond.text})`;
  return [edit(node, 'negate-condition', negated, `condition negated: ${oneLine(cond.text)}`, cond)];
}

function constantEdits(node: Node): Edit[] {
  if (node.type === 'true' || node.type === 'false' || node.type === 'True' || node.type === 'False') {
    const flip: Record<string, string> = { true: 'false', false: 'true', True: 'False', False: 'True' };
    return [edit(node, 'constant', flip[node.text] ?? node.text, `${node.text} → ${flip[node.text]}`)];
  }
  if (!/^\d+$/.test(node.text)) return [];
  const n = Number(node.text);
  const inIndex = node.parent?.type === 'subscript' || node.parent?.type === 'slice';
  const operator: Operator = inIndex ? 'off-by-one' : 'constant';
  const out = [edit(node, operator, String(n + 1), `${n} → ${n + 1}`)];
  if (n > 0) out.push(edit(node, operator, String(n - 1), `${n} → ${n - 1}`));
  return out;
}

function nodeEdits(node: Node, lang: Lang): Edit[] {
  switch (node.type) {
    case 'comparison_operator':
    case 'boolean_operator':
    case 'binary_operator':
    case 'binary_expression':
      return binaryEdits(node);
    case 'return_statement':
    case 'expression_statement':
      return statementEdits(node, lang);
    case 'call':
    case 'call_expression':
      return callEdits(node);
    case 'if_statement':
    case 'while_statement':
    case 'elif_clause':
      return conditionEdits(node, lang);
    case 'integer':
    case 'number':
    case 'true':
    case 'false':
      return constantEdits(node);
    default:
      return [];
  }
}

const oneLine = (text: string) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 57)}…` : line;
};

/** Every mutant of one file, in source order, one per distinct mutated text. */
export async function mutantsOf(file: string, text: string, lang: Lang): Promise<Mutant[]> {
  const parser = await parserFor(file, lang);
  const tree = parser.parse(text);
  parser.delete();
  if (!tree) return [];
  const out: Mutant[] = [];
  const seen = new Set<string>();
  const cursor = tree.walk();
  const visit = (): void => {
    const node = cursor.currentNode;
    if (!node.hasError) {
      for (const e of nodeEdits(node, lang)) {
        const key = `${e.start}:${e.end}:${e.replacement}`;
        if (seen.has(key) || text.slice(e.start, e.end) === e.replacement) continue;
        seen.add(key);
        const line = text.slice(0, e.start).split('\n').length;
        const { node: _node, ...rest } = e;
        out.push({ file, line, ...rest });
      }
    }
    if (cursor.gotoFirstChild()) {
      do visit();
      while (cursor.gotoNextSibling());
      cursor.gotoParent();
    }
  };
  visit();
  tree.delete();
  return out;
}

export function applyMutant(text: string, m: Pick<Mutant, 'start' | 'end' | 'replacement'>): string {
  return text.slice(0, m.start) + m.replacement + text.slice(m.end);
}
