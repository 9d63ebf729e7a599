import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countWords } from '../src/words.mjs';

test('counts words separated by one space', () => assert.equal(countWords('one two three'), 3));
test('runs of spaces, tabs and newlines separate words too', () => assert.equal(countWords('a  b\tc\nd'), 4));
test('an empty or blank text has no words', () => assert.equal(countWords('  '), 0));
