// Ids: prefix + 10 chars of Crockford base32 milliseconds + 12 random base32 chars (60 bits).
// Lexicographic order is creation order (monotonic within a process, like ULID), URL-safe, short.
import { createHash, randomBytes, randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

let lastTime = -1;
let lastRandom: number[] = [];

// Ids are not secrets: their random bytes come from a pool refilled 4 KiB at a time, which spares a
// call into the CSPRNG (and its fork check, a syscall) per id on the proxy's hot path.
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function randomDigits(n: number): number[] {
  if (poolAt + n > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = pool[poolAt + i] & 31;
  poolAt += n;
  return out;
}

function encodeTime(ms: number): string {
  let out = '';
  let t = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

/** A new id such as `run_01jeq3k9vz4m8x2c5d7f9gh0`: sortable by creation time, unique. */
export function newId(prefix: string): string {
  let now = Date.now();
  if (now <= lastTime) {
    now = lastTime;
    // Same (or earlier) millisecond: increment the random part so ids stay strictly increasing.
    let i = lastRandom.length - 1;
    while (i >= 0 && lastRandom[i] === 31) {
      lastRandom[i] = 0;
      i--;
    }
    if (i < 0) {
      now = lastTime + 1;
      lastRandom = randomDigits(12);
    } else {
      lastRandom[i]++;
    }
  } else {
    lastRandom = randomDigits(12);
    // Keep headroom for increments within the millisecond.
    lastRandom[0] &= 15;
  }
  lastTime = now;
  return `${prefix}_${encodeTime(now)}${lastRandom.map((d) => ALPHABET[d]).join('')}`;
}

/** A rollout or recording key: `hrk_` + 32 random bytes, base64url. */
export function newKey(): string {
  return `hrk_${randomBytes(32).toString('base64url')}`;
}

/** A run's worker credential: `hrw_` + 32 random bytes, base64url (only that run's worker routes). */
export function newWorkerKey(): string {
  return `hrw_${randomBytes(32).toString('base64url')}`;
}

/**
 * What the store keeps of a key: its SHA-256, hex. Keys are 256 random bits, so a plain hash is
 * enough (no salt or stretching needed): a copy of the database grants nothing.
 */
export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
