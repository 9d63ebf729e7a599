import { describe, expect, it } from 'vitest';
import type { SampleJson } from '../../daemon/protocol/samples';
import { breakDiagnosis, heat, summarize, tokenLabel, tokenView } from './tokens';

const call = (prompt: number[], response: number[], lp?: number[]) => ({
  prompt_ids: prompt,
  response_ids: response,
  response_logprobs: lp ?? null,
  status: 'ok' as const,
});

describe('token view model', () => {
  it('merges a continuing call into one sample: prompt tokens mask 0, responses mask 1 with logprobs', () => {
    const v = tokenView([call([1, 2], [3, 4], [-0.1, -0.2]), call([1, 2, 3, 4, 5], [6], [-3])], []);
    expect(v).toHaveLength(1);
    expect(v[0].tokens.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(v[0].tokens.map((t) => t.mask)).toEqual([0, 0, 1, 1, 0, 1]);
    expect(v[0].tokens.map((t) => t.call)).toEqual([0, 0, 0, 0, 1, 1]);
    expect(v[0].tokens[5].logprob).toBe(-3);
    expect(v[0].breakBefore).toBeNull();
  });

  it('a prompt that does not continue starts a new sample with the break and its first differing position', () => {
    const v = tokenView([call([1, 2], [3]), call([1, 9, 3], [4])], []);
    expect(v).toHaveLength(2);
    expect(v[1].breakBefore).toMatchObject({
      call_index: 1,
      position: 1,
      expected: [2, 3],
      actual: [9, 3],
      class: 'other',
    });
    expect(summarize(v)).toMatchObject({ samples: 2, breaks: 1, tokens: 7, maskTokens: 2 });
  });

  it('uses the break the daemon diagnosed, and its samples for masks and advantages', () => {
    const daemonBreak = {
      call_index: 1,
      position: 1,
      expected: [2],
      actual: [9],
      expected_text: 'b',
      actual_text: 'x',
      class: 'template' as const,
    };
    const samples: SampleJson[] = [
      {
        rollout_id: 'r',
        group_id: 'g',
        index: 0,
        input_ids: [1, 2, 3],
        loss_mask: [0, 0, 1],
        advantages: [0, 0, 0.7],
        old_logprobs: [null, null, -0.5],
        loss_weights: [0, 0, 1],
      },
    ];
    const v = tokenView([call([1, 2], [3]), call([1, 9, 3], [4])], [daemonBreak], samples, [['a', 'b', 'c']]);
    expect(v[1].breakBefore).toBe(daemonBreak);
    expect(v[0].tokens[2]).toMatchObject({ advantage: 0.7, logprob: -0.5, text: 'c' });
    expect(v[1].tokens[0].advantage).toBeNull();
    expect(breakDiagnosis(daemonBreak)).toMatch(/template/);
  });

  it('a break the bridge explained names the message that changed and how', () => {
    const b = {
      call_index: 2,
      position: 40,
      expected: [1],
      actual: [2],
      expected_text: null,
      actual_text: null,
      class: 'other' as const,
      bridge_fallback: 'history edited: message 3 (user): content edited at character 5',
      change: {
        index: 3,
        role: 'user',
        change: 'content_edited' as const,
        detail: 'content edited at character 5: "hello" where it was "hi"',
      },
    };
    expect(breakDiagnosis(b)).toBe(
      'Message 3 (user) was edited: content edited at character 5: "hello" where it was "hi".',
    );
    expect(breakDiagnosis({ ...b, change: null, bridge_fallback: 'tools changed' })).toMatch(
      /Bridge: tools changed\.$/,
    );
  });

  it('skips calls without token ids (text-only calls)', () => {
    expect(
      tokenView([{ prompt_ids: null, response_ids: null, response_logprobs: null, status: 'ok' }], []),
    ).toEqual([]);
  });

  it('heat grows as the token gets less likely; unknown logprobs have none', () => {
    expect(heat(0)).toBe(0);
    expect(heat(Math.log(0.5))).toBe(50);
    expect(heat(-20)).toBe(100);
    expect(heat(null)).toBeNull();
    expect(tokenLabel({ id: 7, text: null })).toBe('7');
    expect(tokenLabel({ id: 10, text: '\n' })).toBe('↵\n');
  });
});
