// Prefix-break diagnosis on real Qwen3 token ids (the chat template and tokenizer the proxy uses).
import { describe, expect, it } from 'vitest';
import { localQwen3Tokenizer } from '../tokenize/qwen3';
import { buildSamples } from './build';

const tok = localQwen3Tokenizer();
const encode = (text: string) => tok.encode(text) as number[];
const decode = (ids: number[]) => tok.decode(ids) as string;
const user = (content: string) => ({ role: 'user', content });

async function twoTurns(firstResponse: number[], historyText: string) {
  const p1 = await tok.render([user('What is 2+2?')], undefined, true);
  const p2 = await tok.render(
    [user('What is 2+2?'), { role: 'assistant', content: historyText }, user('Thanks!')],
    undefined,
    true,
  );
  return buildSamples(
    [
      {
        rollout_id: 'r',
        group_id: 'g',
        reward: 1,
        calls: [
          { prompt_ids: p1, response_ids: firstResponse, response_logprobs: null },
          { prompt_ids: p2, response_ids: encode('You are welcome.<|im_end|>'), response_logprobs: null },
        ],
      },
    ],
    { merge: 'exact', advantage: 'grpo', loss_agg: 'token-mean', decode },
  ).rollouts.get('r')!;
}

describe('prefix breaks on Qwen3 token ids', () => {
  it('a history the template renders token-exactly merges into one sample', async () => {
    const r = await twoTurns(encode('The answer is 4.<|im_end|>'), 'The answer is 4.');
    expect(r.stats).toMatchObject({ samples: 1, prefix_breaks: 0 });
  });

  it('reasoning the template drops from the history is a template break at the <think> token', async () => {
    const sampled = encode('<think>\nEasy.\n</think>\n\nThe answer is 4.<|im_end|>');
    const r = await twoTurns(sampled, 'The answer is 4.');
    expect(r.stats.prefix_breaks).toBe(1);
    const [b] = r.prefix_breaks;
    expect(b.class).toBe('template');
    expect(b.expected_text).toMatch(/^<think>/);
    expect(b.actual_text).toMatch(/^The answer is 4\./);
  });

  it('the same text sampled as other tokens than the tokenizer makes is a retokenization', async () => {
    // the model emitted "The answer is 4." as pieces the tokenizer would never produce together
    const sampled = [...encode('The answ'), ...encode('er is 4.'), ...encode('<|im_end|>')];
    expect(decode(sampled)).toBe('The answer is 4.<|im_end|>');
    const r = await twoTurns(sampled, 'The answer is 4.');
    expect(r.stats.prefix_breaks).toBe(1);
    expect(r.prefix_breaks[0].class).toBe('retokenized');
  });

  it('a history the harness edited is another kind of break', async () => {
    const r = await twoTurns(encode('The answer is 4.<|im_end|>'), 'The answer is four.');
    expect(r.prefix_breaks[0]).toMatchObject({ class: 'other' });
    expect(r.prefix_breaks[0].actual_text).toMatch(/^ four/);
  });
});
