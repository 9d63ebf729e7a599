import { describe, expect, it } from 'vitest';
import { NEUTRAL_SAMPLING } from '../../daemon/protocol/algorithm';
import type { CallSampling } from '../../daemon/protocol/entities';
import { samplingLine, samplingTitle } from './sampling';

const run: CallSampling = {
  ...NEUTRAL_SAMPLING,
  seed: null,
  max_tokens: 256,
  source: 'run',
  overridden: { temperature: 0.6, top_k: 20 },
};

describe("a call's sampling in the trajectory view", () => {
  it("says the run's T 1 replaced the harness's values, and lists what the harness asked for", () => {
    expect(samplingLine(run)).toBe("T 1 (run's, harness values replaced)");
    const title = samplingTitle(run);
    expect(title).toContain('top-k: off');
    expect(title).toContain('max tokens: 256');
    expect(title).toContain('harness asked temperature: 0.6');
    expect(title).toContain('harness asked top_k: 20');
  });

  it('shows truncation a harness sent, and the backend default where it sent nothing', () => {
    const harness: CallSampling = {
      ...run,
      temperature: null,
      top_k: 20,
      top_p: 0.95,
      source: 'request',
      overridden: null,
    };
    expect(samplingLine(harness)).toBe("T backend default · top-p 0.95 · top-k 20 (harness's)");
    expect(samplingTitle(harness)).toContain('T: backend default');
    expect(samplingLine(null)).toBeNull();
  });

  it('says a call whose decoding a request field constrained is not trained on, and by which fields', () => {
    const constrained: CallSampling = {
      ...run,
      overridden: null,
      constrained: ['tool_choice', 'logit_bias'],
    };
    expect(samplingLine(constrained)).toBe(
      "T 1 (run's) · constrained by tool_choice, logit_bias: not trained on",
    );
    expect(samplingTitle(constrained)).toContain('decoding constrained by tool_choice, logit_bias');
  });
});
