import assert from 'node:assert/strict';
import { test } from 'node:test';
import { slugify } from '../src/slug.mjs';

test('words are joined by dashes', () => assert.equal(slugify('hello world'), 'hello-world'));
test('letters are lowercased', () => assert.equal(slugify('Hello World'), 'hello-world'));
test('punctuation and runs of spaces become one dash', () => assert.equal(slugify('a,  b!c'), 'a-b-c'));
