// Property-based checks of the sequence-ratio (GSPO) policy loss against the token-ratio one (fast-check).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { policySequenceLoss, policyTokenLoss, type TokenLossConfig } from './loss';
import { mu, num } from './loss-arbitraries';

const token = fc.record({ lp: num(-4, -0.01), old: num(-4, -0.01), mu, A: num(-2, 2) });
const config = fc.record({
  clip_low: fc.constantFrom(0.2, 3e-4),
  clip_high: fc.constantFrom(0.28, 4e-4),
  tis_cap: fc.constantFrom(2, 1.5, null),
  dual_clip: fc.constantFrom(null, 3),
  policy_ratio: fc.constant('sequence' as const),
});
type Tok = { lp: number; old: number; mu: number; A: number };

const seqLoss = (toks: Tok[], cfg: TokenLossConfig) =>
  policySequenceLoss(
    toks.map((t) => t.lp),
    toks.map((t) => t.old),
    toks.map((t) => t.mu),
    toks.map((t) => t.A),
    cfg,
  );

describe('sequence-ratio policy loss (GSPO)', () => {
  it('a one-token sequence is token mode exactly', () => {
    fc.assert(
      fc.property(token, config, (t, cfg) => {
        const [got] = seqLoss([t], cfg);
        expect(got).toEqual(policyTokenLoss(t.lp, t.old, t.mu, t.A, cfg));
      }),
    );
  });

  it('policy_ratio token (or absent) is policyTokenLoss per token', () => {
    fc.assert(
      fc.property(fc.array(token, { minLength: 1, maxLength: 6 }), config, (toks, cfg) => {
        const want = toks.map((t) => policyTokenLoss(t.lp, t.old, t.mu, t.A, cfg));
        expect(seqLoss(toks, { ...cfg, policy_ratio: 'token' })).toEqual(want);
        const { policy_ratio: _, ...absent } = cfg;
        expect(seqLoss(toks, absent)).toEqual(want);
      }),
    );
  });

  it('tokens that share one log-ratio have their token-mode loss and gradient', () => {
    // decoupled, every token at lp − old = d (μ anywhere); bypass, every token at lp − μ = d
    fc.assert(
      fc.property(
        fc.array(fc.record({ lp: num(-4, -0.01), mu, A: num(-2, 2) }), { minLength: 1, maxLength: 6 }),
        num(-0.5, 0.5),
        config,
        (rows, d, cfg) => {
          const toks = rows.map((r) =>
            cfg.tis_cap === null ? { lp: r.lp, old: r.lp, mu: r.lp - d, A: r.A } : { ...r, old: r.lp - d },
          );
          const got = seqLoss(toks, cfg);
          toks.forEach((t, k) => {
            const want = policyTokenLoss(t.lp, t.old, t.mu, t.A, cfg);
            const scale = 1 + Math.abs(want.loss) + Math.abs(want.dlogp);
            expect(Math.abs(got[k].loss - want.loss)).toBeLessThan(1e-9 * scale);
            expect(Math.abs(got[k].dlogp - want.dlogp)).toBeLessThan(1e-9 * scale);
            expect(got[k].tisWeight).toBe(want.tisWeight);
          });
        },
      ),
    );
  });

  it("with one advantage and weight per sequence, dlogp / n is the finite difference of GSPO's objective", () => {
    // J = (1/n) Σ_u ℓ_u (seq-mean-token-mean), lp_t moved alone (through log s); decoupled mode with
    // μ_u = old_u − c for one c, so the TIS weight is the same on every token
    fc.assert(
      fc.property(
        fc.array(token, { minLength: 1, maxLength: 6 }),
        num(-2, 2),
        num(-1.5, 1.5),
        config,
        (rows, A, c, cfg) => {
          const toks = rows.map((r) => ({ ...r, A, mu: cfg.tis_cap === null ? r.mu : r.old - c }));
          const n = toks.length;
          const J = (ts: Tok[]) => seqLoss(ts, cfg).reduce((a, p) => a + p.loss, 0) / n;
          const at = seqLoss(toks, cfg);
          const j0 = J(toks);
          toks.forEach((_, t) => {
            const h = 1e-6;
            const moved = (e: number) => toks.map((u, k) => (k === t ? { ...u, lp: u.lp + e } : u));
            const right = (J(moved(h)) - j0) / h;
            const left = (j0 - J(moved(-h))) / h;
            const want = at[t].dlogp / n;
            const tol = 1e-4 * (1 + Math.abs(want));
            if (Math.abs(right - left) > tol) return; // a clip, dual-clip or clamp edge within h
            expect(Math.abs((right + left) / 2 - want)).toBeLessThan(tol);
          });
        },
      ),
    );
  });
});
