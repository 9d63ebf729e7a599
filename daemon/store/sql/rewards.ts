// Rewards of rollouts; the latest one is also the rollout's `reward`.
import type { Reward, Rollout } from '../../protocol/entities';
import type { Row } from '../driver';
import { newId } from '../ids';
import type { SqlContext } from './context';
import { lockRollout } from './rollout-rows';
import { invalid, iso, json, now, num, parse } from './values';

const REWARD_COLS = 'id, rollout_id, value, source, detail, created_at';
function toReward(r: Row): Reward {
  return {
    id: String(r.id),
    rollout_id: String(r.rollout_id),
    value: num(r.value),
    source: String(r.source),
    detail: parse(r.detail),
    created_at: iso(r.created_at),
  };
}

export async function addReward(
  c: SqlContext,
  rolloutId: string,
  input: { value: number; source: string; detail?: unknown },
): Promise<Reward> {
  if (typeof input.value !== 'number' || !Number.isFinite(input.value)) {
    invalid('value', 'reward value must be a finite number');
  }
  if (typeof input.source !== 'string' || input.source === '')
    invalid('source', 'source must be a non-empty string');
  return c.tx(async (q, emit) => {
    const rollout = await lockRollout(c, q, rolloutId);
    const reward: Reward = {
      id: newId('rwd'),
      rollout_id: rolloutId,
      value: input.value,
      source: input.source,
      detail: input.detail ?? null,
      created_at: now(),
    };
    await q.run(`INSERT INTO rewards (${REWARD_COLS}) VALUES (?, ?, ?, ?, ?, ?)`, [
      reward.id,
      reward.rollout_id,
      reward.value,
      reward.source,
      json(reward.detail),
      reward.created_at,
    ]);
    const next: Rollout = { ...rollout, reward: reward.value, updated_at: reward.created_at };
    await q.run('UPDATE rollouts SET reward = ?, updated_at = ? WHERE id = ?', [
      next.reward,
      next.updated_at,
      rolloutId,
    ]);
    emit({ type: 'reward', reward });
    emit({ type: 'rollout', rollout: next });
    return reward;
  });
}

export async function listRewards(c: SqlContext, rolloutId: string): Promise<Reward[]> {
  return c.read(async () => {
    await c.mustExist(c.db, 'rollouts', rolloutId, 'rollout_id', 'rollout');
    const rows = await c.db.all(`SELECT ${REWARD_COLS} FROM rewards WHERE rollout_id = ? ORDER BY id`, [
      rolloutId,
    ]);
    return rows.map(toReward);
  });
}
