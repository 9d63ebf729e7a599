import { describe, expect, it } from 'vitest';
import { count, formatNumber, signed, statusClass } from './format';

describe('numbers as people read them', () => {
  it('drops float noise and keeps three significant digits', () => {
    expect(formatNumber(0.6499999999999999)).toBe('0.65');
    expect(formatNumber(0.1 + 0.2)).toBe('0.3');
    expect(formatNumber(2 / 3)).toBe('0.667');
    expect(formatNumber(0.012345)).toBe('0.0123');
    expect(formatNumber(-0.24999)).toBe('−0.25');
  });

  it('keeps whole numbers and the integer part of large values whole', () => {
    expect(formatNumber(0)).toBe('0');
    expect(formatNumber(1200)).toBe('1200');
    expect(formatNumber(1234.567)).toBe('1235');
    expect(formatNumber(-3)).toBe('−3');
  });

  it('writes tiny values with an exponent and says when there is no value', () => {
    expect(formatNumber(0.0000123)).toBe('1.23e-5');
    expect(formatNumber(null)).toBe('—');
    expect(formatNumber(Number.NaN)).toBe('NaN');
  });

  it('counts with the right plural', () => {
    expect(count(1, 'attempt')).toBe('1 attempt');
    expect(count(0, 'sample')).toBe('0 samples');
    expect(count(2, 'prefix break')).toBe('2 prefix breaks');
    expect(count(1, 'llm call')).toBe('1 llm call');
    expect(count(3, 'entry', 'entries')).toBe('3 entries');
  });

  it('signs advantages', () => {
    expect(signed(0.5)).toBe('+0.5');
    expect(signed(-0.5)).toBe('−0.5');
    expect(signed(0)).toBe('0');
  });
});

describe('llm call statuses', () => {
  it('show an answer that cannot be trained on as a warning, a failed call as an error', () => {
    expect(statusClass('ok')).toBe('');
    for (const s of ['no_choices', 'no_token_ids', 'logprobs_mismatch'])
      expect(statusClass(s)).toBe('warning');
    for (const s of ['error', 'cancelled']) expect(statusClass(s)).toBe('error');
  });
});
