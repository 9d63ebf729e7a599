// Property-based checks of the CISPO policy loss (clipped, detached IS weight) against PPO-clip (fast-check).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { policySequenceLoss, policyTokenLoss, type TokenLossConfig } from './loss';
import { mu, num } from './loss-arbitraries';

const config = fc.record({
  clip_low: fc.constantFrom(0.2, 10),
  clip_high: fc.constantFrom(0.28, 0.2, 4e-4),
  tis_cap: fc.constantFrom(2, 1.5, null),
  dual_clip: fc.constantFrom(null, 3),
  policy_loss: fc.constant('cispo' as const),
});
const ppo = (cfg: TokenLossConfig) => ({ ...cfg, policy_loss: 'ppo' as const });

/** A token whose ratio (as the mode takes it) is exp(d): decoupled lp − old = d, bypass lp − μ = d. */
function tokenAt(lp: number, d: number, m: number, cfg: TokenLossConfig) {
  return cfg.tis_cap === null ? { lp, old: lp, mu: lp - d } : { lp, old: lp - d, mu: m };
}

describe('CISPO policy loss', () => {
  it("with r inside [1 − ε_low, 1 + ε_high], its loss's gradient is PPO-clip's (any A), nothing clipped", () => {
    fc.assert(
      fc.property(num(-4, -0.01), num(0.001, 0.999), mu, num(-2, 2), config, (lp, u, m, A, cfg) => {
        const lo = Math.log(Math.max(1 - cfg.clip_low, 1e-3));
        const d = lo + u * (Math.log(1 + cfg.clip_high) - lo);
        const t = tokenAt(lp, d, m, cfg);
        const got = policyTokenLoss(t.lp, t.old, t.mu, A, cfg);
        const want = policyTokenLoss(t.lp, t.old, t.mu, A, ppo(cfg));
        expect(got.clipped).toBe(false);
        expect(Math.abs(got.dlogp - want.dlogp)).toBeLessThan(1e-12 * (1 + Math.abs(want.dlogp)));
        expect(got.tisWeight).toBe(want.tisWeight);
        expect(got.logRatio).toBe(want.logRatio);
      }),
    );
  });

  it('a token whose weight is clipped keeps the gradient −(1 ± ε)·A·w (PPO-clip: none with A > 0, r high)', () => {
    fc.assert(
      fc.property(num(-4, -0.01), num(0.3, 3), mu, num(0.01, 2), config, (lp, d, m, A, cfg) => {
        const t = tokenAt(lp, d, m, cfg); // r = e^d > 1.28
        const got = policyTokenLoss(t.lp, t.old, t.mu, A, cfg);
        expect(got.clipped).toBe(true);
        const want = -(1 + cfg.clip_high) * A * got.tisWeight;
        expect(Math.abs(got.dlogp - want)).toBeLessThan(1e-12 * Math.abs(want));
        expect(policyTokenLoss(t.lp, t.old, t.mu, A, ppo(cfg)).dlogp).toBe(0);
        // the same ratio below 1 − ε_low (where it is above 0) on A < 0
        const low = tokenAt(lp, -d, m, cfg);
        const below = policyTokenLoss(low.lp, low.old, low.mu, -A, cfg);
        expect(below.clipped).toBe(1 - cfg.clip_low > Math.exp(-d));
        if (below.clipped) expect(below.dlogp).toBeCloseTo((1 - cfg.clip_low) * A * below.tisWeight, 12);
      }),
    );
  });

  it("the value is verl's −weight·A·lp: the gradient times lp; dual clip changes nothing", () => {
    fc.assert(
      fc.property(num(-4, -0.01), num(-4, -0.01), mu, num(-2, 2), config, (lp, old, m, A, cfg) => {
        const got = policyTokenLoss(lp, old, m, A, cfg);
        expect(Math.abs(got.loss - got.dlogp * lp)).toBeLessThan(1e-12 * (1 + Math.abs(got.loss)));
        expect(policyTokenLoss(lp, old, m, A, { ...cfg, dual_clip: cfg.dual_clip ? null : 3 })).toEqual(got);
      }),
    );
  });

  it('policy_loss ppo is the absent default, and the sequence ratio (GSPO) refuses cispo', () => {
    fc.assert(
      fc.property(num(-4, -0.01), num(-4, -0.01), mu, num(-2, 2), config, (lp, old, m, A, cfg) => {
        const { policy_loss: _, ...absent } = cfg;
        expect(policyTokenLoss(lp, old, m, A, ppo(cfg))).toEqual(policyTokenLoss(lp, old, m, A, absent));
        expect(policySequenceLoss([lp], [old], [m], [A], cfg)).toEqual([policyTokenLoss(lp, old, m, A, cfg)]);
      }),
    );
    const cfg = { clip_low: 0.2, clip_high: 0.28, tis_cap: 2, policy_loss: 'cispo' as const };
    expect(() => policySequenceLoss([-1], [-1], [-1], [1], { ...cfg, policy_ratio: 'sequence' })).toThrow(
      /cispo/,
    );
  });
});
