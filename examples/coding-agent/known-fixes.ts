// Known-good edits, one per task: what a model that solved the task could write (tests use them to
// check that every task is solvable and that the verifier rewards a fix with 1).
export const FIXES: Record<string, Record<string, string>> = {
  clamp: {
    'src/clamp.mjs': 'export function clamp(x, lo, hi) {\n  return Math.max(lo, Math.min(x, hi));\n}\n',
  },
  slug: {
    'src/slug.mjs':
      "export function slugify(title) {\n  return title.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).join('-');\n}\n",
  },
  words: {
    'src/words.mjs':
      'export function countWords(text) {\n  return text.split(/\\s+/).filter(Boolean).length;\n}\n',
  },
  roman: {
    'src/roman.mjs': `const NUMERALS = [[1000, 'M'], [900, 'CM'], [500, 'D'], [400, 'CD'], [100, 'C'], [90, 'XC'],
  [50, 'L'], [40, 'XL'], [10, 'X'], [9, 'IX'], [5, 'V'], [4, 'IV'], [1, 'I']];
export function toRoman(n) {
  let out = '';
  for (const [value, numeral] of NUMERALS) while (n >= value) { out += numeral; n -= value; }
  return out;
}
`,
  },
};
