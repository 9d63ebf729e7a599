// What a run checks, when it starts, of the vLLM an inference node started (vllmMismatch).
import { describe, expect, it } from 'vitest';
import { RunConfig } from '../protocol/config';
import { vllmMismatch } from './run-backends';

const run = (extra: Record<string, unknown>) =>
  RunConfig.parse({ name: 'r', tasks: { file: 't.jsonl' }, ...extra });
const raw = { enable_lora: true, max_lora_rank: 16, logprobs_mode: 'raw_logprobs' };
const processed = { ...raw, logprobs_mode: 'processed_logprobs' };

describe('vllmMismatch', () => {
  it('a run sampling at T = 0.7 refuses a vLLM that returns raw logprobs (the T = 1 distribution), naming the flag', () => {
    const hot = run({ algorithm: { sampling: { temperature: 0.7, top_p: 0.9 } } });
    expect(vllmMismatch(hot, raw)).toBe(
      'the run samples with temperature 0.7, top_p 0.9 but its vLLM returns raw_logprobs (the distribution before them): start vLLM with --logprobs-mode processed_logprobs',
    );
    expect(vllmMismatch(hot, processed)).toBeNull();
  });

  it('a run at neutral sampling takes either mode (raw and processed logprobs are the same there)', () => {
    expect(vllmMismatch(run({}), raw)).toBeNull();
    expect(vllmMismatch(run({ algorithm: { sampling: { temperature: 1 } } }), raw)).toBeNull();
  });

  it("a LoRA run refuses a vLLM without --enable-lora, or whose --max-lora-rank is below the run's rank", () => {
    const lora = run({ model: { name: 'policy', lora: { rank: 32, alpha: 64 } } });
    expect(vllmMismatch(lora, { ...processed, enable_lora: false })).toMatch(/without --enable-lora/);
    expect(vllmMismatch(lora, processed)).toMatch(
      /model\.lora\.rank 32 is above its vLLM's --max-lora-rank 16/,
    );
    expect(vllmMismatch(lora, { ...processed, max_lora_rank: 32 })).toBeNull();
    expect(vllmMismatch(run({}), { ...processed, enable_lora: false })).toBeNull();
  });
});
