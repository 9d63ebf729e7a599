import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clamp } from '../src/clamp.mjs';

test('a value inside the range is kept', () => assert.equal(clamp(2, 0, 3), 2));
test('a value above the range gives hi', () => assert.equal(clamp(5, 0, 3), 3));
test('a value below the range gives lo', () => assert.equal(clamp(-1, 0, 3), 0));
