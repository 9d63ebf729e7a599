// A chat answer's prompt ids read from where the rollout's last ones end give the answer that parsing
// the whole text gives: for conversations that grow, restart, edit their history or send malformed lists.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseChatAnswer } from './answer-scan';
import { parseBackendJson } from './json';
import { PromptIdsMemo } from './prompt-ids';

/** A chat answer as vLLM writes it, `list` the text inside its prompt_token_ids brackets. */
const answer = (list: string, content = 'ok') =>
  `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":${JSON.stringify(content)}},"finish_reason":"stop","token_ids":[5,6]}],"prompt_token_ids":[${list}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`;

const ids = fc.array(fc.nat({ max: 200_000 }), { maxLength: 60 });

/** One answer of a rollout: the last prompt continued, a new one, or an odd list. */
const step = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('grow' as const), ids }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('new' as const), ids }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('comma' as const), text: fc.constantFrom(',', ',,', ', 1') }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('odd' as const),
      text: fc.constantFrom(
        '1,,2',
        '1,2,',
        ',1',
        '1.5,2',
        '-1,2',
        '1e3',
        ' 1, 2',
        '"a",1',
        '[1],2',
        '{"x":1}',
        '',
      ),
    }),
  },
);

describe('prompt ids read from where the last ones end', () => {
  it('gives every answer of a rollout exactly as parsing its whole text does', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), fc.boolean(), (steps, scanned) => {
        const memo = new PromptIdsMemo();
        const parse = scanned ? (t: string) => parseChatAnswer(t) : parseBackendJson;
        let prompt: number[] = [];
        for (const s of steps) {
          let list: string;
          if (s.kind === 'odd') list = s.text;
          else if (s.kind === 'comma') list = prompt.join(',') + s.text;
          else {
            prompt = s.kind === 'grow' ? prompt.concat(s.ids) : s.ids;
            list = prompt.join(',');
          }
          const text = answer(list);
          expect(JSON.stringify(memo.parse('r1', text, parse))).toBe(JSON.stringify(parse(text)));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('parses whole an answer whose prompt ids are not at the top level or appear twice', () => {
    const memo = new PromptIdsMemo();
    memo.parse('r1', answer('1,2,3'), parseBackendJson);
    const nested = '{"choices":[{"prompt_token_ids":[1,2,3,4]}],"prompt_token_ids":null}';
    const twice = '{"prompt_token_ids":[1,2,3,4],"x":{"prompt_token_ids":[1]}}';
    for (const t of [nested, twice])
      expect(JSON.stringify(memo.parse('r1', t, parseBackendJson))).toBe(JSON.stringify(parseBackendJson(t)));
  });

  it('keeps no more than its budget, and nothing of a rollout it was told to forget', () => {
    const memo = new PromptIdsMemo(10_000);
    const list = Array.from({ length: 300 }, (_, i) => i).join(',');
    for (let r = 0; r < 20; r++) memo.parse(`r${r}`, answer(list), parseBackendJson);
    expect(memo.held.bytes).toBeLessThanOrEqual(10_000);
    expect(memo.held.rollouts).toBeGreaterThan(0);
    memo.forget('r19');
    expect(memo.held.rollouts).toBe(0 + Math.floor(10_000 / (list.length + 8 * 300)) - 1);
  });
});
