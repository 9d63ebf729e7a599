import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RetrievalTask, search } from './agent';
import { score } from './score';
import { Bm25, loadCorpus, terms } from './search';

const tasks = readFileSync(new URL('./tasks.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => RetrievalTask.parse(JSON.parse(l)));
const corpus = loadCorpus();

describe('the reward: exact match and token F1 against the gold answers', () => {
  it('ignores case, punctuation, articles and thousands separators', () => {
    expect(score('The ferry Sildra.', ['Sildra'])).toEqual({ exact: false, f1: 2 / 3 });
    expect(score('sildra', ['Sildra', 'the ferry Sildra'])).toEqual({ exact: true, f1: 1 });
    expect(score('About 3,000 pairs', ['3000'])).toMatchObject({ exact: false, f1: 0.5 });
    expect(score('3000', ['3,000'])).toEqual({ exact: true, f1: 1 });
  });
  it('gives 0 for a wrong or empty answer', () => {
    expect(score('1875', ['1874'])).toEqual({ exact: false, f1: 0 });
    expect(score('', ['1874'])).toEqual({ exact: false, f1: 0 });
    expect(score('q#k!', ['Edda Lund'])).toEqual({ exact: false, f1: 0 });
  });
});

describe('the search tool (BM25 over corpus.jsonl)', () => {
  it('finds the passage that answers each task, by the question’s own words, first or second', () => {
    const index = new Bm25(corpus);
    for (const task of tasks) {
      const hits = index.search(task.question, 2).map((h) => h.doc);
      const answered = hits.some((d) =>
        task.answers.some((a) => terms(d.text).join(' ').includes(terms(a).join(' '))),
      );
      expect(answered, `${task.id}: ${hits.map((d) => d.id)}`).toBe(true);
    }
  });
  it('ranks by term rarity: a rare word beats a common one', () => {
    const [top] = new Bm25(corpus).search('Varnholm larch');
    expect(top!.doc.id).toBe('boat');
  });
  it('answers the model with passages, or says what was wrong with the call', () => {
    expect(search('{"query":"puffin colony"}')).toMatchObject({
      ok: true,
      result: expect.stringMatching(/^\[bird\]/),
    });
    expect(search('{"query":"zzzz"}')).toEqual({ ok: true, result: 'no passage matches' });
    expect(search('{"q":1}')).toEqual({ ok: false, result: 'error: search takes {"query": "keywords"}' });
    expect(search('not json')).toMatchObject({ ok: false });
  });
});

describe('the task set', () => {
  it('has unique ids and gold answers found in the corpus', () => {
    expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
    const all = terms(corpus.map((d) => d.text).join(' ')).join(' ');
    for (const t of tasks)
      expect(
        t.answers.some((a) => all.includes(terms(a).join(' '))),
        t.id,
      ).toBe(true);
  });
});
