// BM25 over the small corpus shipped here (corpus.jsonl): the agent's `search` tool.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const Doc = z.object({ id: z.string(), title: z.string(), text: z.string() });
export type Doc = z.infer<typeof Doc>;

export function loadCorpus(file = new URL('./corpus.jsonl', import.meta.url)): Doc[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      const r = Doc.safeParse(JSON.parse(l));
      if (!r.success) throw new Error(`corpus line ${i + 1}: ${r.error.message}`);
      return r.data;
    });
}

/** Lowercase words of letters and digits ("3,000" → "3000"). */
export function terms(text: string): string[] {
  return (
    text
      .toLowerCase()
      .replace(/(\d),(\d)/g, '$1$2')
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** Okapi BM25 (k1 = 1.2, b = 0.75) over each document's title and text. */
export class Bm25 {
  private readonly docTerms: Map<string, number>[];
  private readonly lengths: number[];
  private readonly avgLength: number;
  private readonly df = new Map<string, number>();

  constructor(
    readonly docs: Doc[],
    private readonly k1 = 1.2,
    private readonly b = 0.75,
  ) {
    this.docTerms = docs.map((d) => {
      const tf = new Map<string, number>();
      for (const t of terms(`${d.title} ${d.text}`)) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const t of tf.keys()) this.df.set(t, (this.df.get(t) ?? 0) + 1);
      return tf;
    });
    this.lengths = this.docTerms.map((tf) => [...tf.values()].reduce((a, b) => a + b, 0));
    this.avgLength = this.lengths.reduce((a, b) => a + b, 0) / Math.max(1, docs.length);
  }

  /** The `k` best documents for `query` with a score above 0, best first. */
  search(query: string, k = 3): { doc: Doc; score: number }[] {
    const n = this.docs.length;
    const q = [...new Set(terms(query))];
    return this.docs
      .map((doc, i) => {
        let score = 0;
        for (const t of q) {
          const f = this.docTerms[i]!.get(t) ?? 0;
          if (f === 0) continue;
          const df = this.df.get(t)!;
          const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
          score +=
            (idf * f * (this.k1 + 1)) /
            (f + this.k1 * (1 - this.b + (this.b * this.lengths[i]!) / this.avgLength));
        }
        return { doc, score };
      })
      .filter((r) => r.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, k);
  }
}
