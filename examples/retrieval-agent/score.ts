// The reward: the answer against the task's gold answers, SQuAD-style: exact match and token F1 after
// normalising (lowercase, no punctuation or articles, single spaces); the best over the gold answers.

/** Lowercase, "3,000" → "3000", punctuation and the articles a/an/the removed, spaces collapsed. */
export function normalize(text: string): string {
  return text
    .toLowerCase()
    .replace(/(\d),(\d)/g, '$1$2')
    .replace(/[^\p{L}\p{N}\s]/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Token F1 of `answer` against one gold answer. */
export function f1(answer: string, gold: string): number {
  const got = normalize(answer).split(' ').filter(Boolean);
  const want = normalize(gold).split(' ').filter(Boolean);
  if (got.length === 0 || want.length === 0) return got.length === want.length ? 1 : 0;
  const left = new Map<string, number>();
  for (const t of want) left.set(t, (left.get(t) ?? 0) + 1);
  let common = 0;
  for (const t of got) {
    const n = left.get(t) ?? 0;
    if (n > 0) {
      common++;
      left.set(t, n - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / got.length;
  const recall = common / want.length;
  return (2 * precision * recall) / (precision + recall);
}

export function score(answer: string, golds: string[]): { exact: boolean; f1: number } {
  return {
    exact: golds.some((g) => normalize(answer) === normalize(g)),
    f1: Math.max(0, ...golds.map((g) => f1(answer, g))),
  };
}
