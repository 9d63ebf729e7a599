import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toRoman } from '../src/roman.mjs';

test('adds numerals from the largest', () => assert.equal(toRoman(2023), 'MMXXIII'));
test('writes 4 and 9 by subtraction', () => assert.equal(toRoman(49), 'XLIX'));
test('writes 900 and 400 by subtraction', () => assert.equal(toRoman(1994), 'MCMXCIV'));
