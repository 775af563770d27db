import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { LEGACY_PROVIDER, type ProviderName } from '../../config/providers';
import type {
  PoolRate,
  ProviderPause,
  RateLimit,
  RateToken,
  SlotGiveBack,
  SlotPool,
  SlotPoolState,
  TenantClaim,
} from '../domain/ports';
import { rateTokenOf, TOKEN_READINGS } from '../domain/rates';
import { retryingConflicts } from './dynamodb-conflicts';
import {
  idlePassRemoval,
  slotPoolKey,
  tenantHoldersAttribute,
  tenantPassAttribute,
  waitingMarkerKey,
} from './dynamodb-slot-items';

export { slotPoolKey } from './dynamodb-slot-items';

/**
 * The conditional update that takes a slot of the pool item `key` for
 * `holder`: the count and the holders together, the tenant's holders and pass
 * with a claim, and the rate's token, refused at the limit, at the tenant's
 * cap, when the tenant's pass moved since it was read, while the pool is
 * paused at `at` or another grant probes it, when the rate's clock (or its
 * count) moved since the token was reckoned, or when the holder has one
 * already. Alone it is `acquire`; in a transaction, a slot's grant
 * (`startWithSlot`).
 */
export function acquireUpdate(
  key: { readonly pk: string; readonly sk: string },
  holder: string,
  limit: number,
  claim: TenantClaim | undefined,
  at: Date,
  token: RateToken,
) {
  const add = ['inFlight :one', 'holders :holder'];
  const set: string[] = [];
  const conditions = [
    '(attribute_not_exists(inFlight) OR inFlight < :limit)',
    'NOT contains(holders, :holderId)',
  ];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {
    ':one': 1,
    ':holder': new Set([holder]),
    ':holderId': holder,
    ':limit': limit,
    ':now': at.getTime(),
  };
  if (token.probe) {
    // The first grant since the pause it read ended: it probes alone, and no other grant goes until `probeUntil`.
    conditions.push(
      'pausedUntil = :pausedUntil AND pausedUntil <= :now',
      '(attribute_not_exists(probeUntil) OR probeUntil <= pausedUntil)',
    );
    set.push('probeUntil = :probeUntil', 'probing = :holderId');
    values[':pausedUntil'] = token.probe.pausedUntil;
    values[':probeUntil'] = token.probe.until;
  } else {
    // A paused provider grants nothing, nor one whose probe is under way: part of the slot's condition, not a separate look.
    conditions.push(
      '(attribute_not_exists(pausedUntil) OR (pausedUntil <= :now AND probeUntil > pausedUntil AND probeUntil <= :now))',
    );
  }
  if (token.tat) {
    conditions.push(token.tat.expected === undefined ? 'attribute_not_exists(tat)' : 'tat = :expectedTat');
    set.push('tat = :tat');
    values[':tat'] = token.tat.next;
    if (token.tat.expected !== undefined) values[':expectedTat'] = token.tat.expected;
  }
  if (token.count) {
    if (token.count.expectedMinute === token.count.minute) {
      conditions.push('grantMinute = :minute');
      add.push('grantCount :one');
    } else {
      conditions.push(
        token.count.expectedMinute === undefined
          ? 'attribute_not_exists(grantMinute)'
          : 'grantMinute = :expectedMinute',
      );
      set.push('grantMinute = :minute', 'grantCount = :one', 'grantsBefore = :before');
      values[':before'] = token.count.before;
      if (token.count.since !== undefined) {
        set.push('grantsSince = :since');
        values[':since'] = token.count.since;
      }
      if (token.count.expectedMinute !== undefined) values[':expectedMinute'] = token.count.expectedMinute;
    }
    values[':minute'] = token.count.minute;
  }
  if (claim) {
    names['#tenantHolders'] = tenantHoldersAttribute(claim.tenant);
    add.push('#tenantHolders :holder');
    if (claim.maxInFlight !== undefined) {
      conditions.push('(attribute_not_exists(#tenantHolders) OR size(#tenantHolders) < :cap)');
      values[':cap'] = claim.maxInFlight;
    }
    if (claim.pass) {
      names['#pass'] = tenantPassAttribute(claim.tenant);
      set.push('#pass = :nextPass', '#floor = :floor');
      names['#floor'] = 'floor';
      values[':nextPass'] = claim.pass.next;
      values[':floor'] = claim.pass.floor;
      if (claim.pass.expected === undefined) conditions.push('attribute_not_exists(#pass)');
      else {
        conditions.push('#pass = :expectedPass');
        values[':expectedPass'] = claim.pass.expected;
      }
    }
  }
  return {
    Key: key,
    UpdateExpression: `${set.length ? `SET ${set.join(', ')} ` : ''}ADD ${add.join(', ')}`,
    ConditionExpression: conditions.join(' AND '),
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: values,
  };
}

/**
 * The in-flight limit as one DynamoDB item: a counter and the holders' ids,
 * changed only by conditional updates (the AWS sample "Controlling concurrency
 * in distributed systems using AWS Step Functions"). The count and the set are
 * updated together, so the count is always the set's size.
 *
 * The same item keeps, per tenant, the set of its holders (its count is the
 * set's size, checked against the tenant's cap in the same condition) and its
 * fair-share pass, with the pool's floor: one conditional update takes the
 * slot, counts it for the tenant and moves the tenant's pass on, or does
 * nothing. Names reach the expressions as placeholders, so any tenant name is
 * safe in them.
 *
 * The item stays O(slots held and tenants waiting), never O(tenants ever
 * served): a tenant's holders set goes with its last holder, and its pass
 * once it holds no slot and has no line waiting (`idlePassRemoval`, which says
 * why that is fair): in a plain update after the release of its last slot,
 * which a hand-off makes once the next job has started, or with the marker's
 * retire. No transaction of a release ever names the pool item, which every
 * grant's transaction names already.
 * Acquire and release are judged when they run, so they are sent again when
 * they meet another transaction on the item.
 */
export class DynamoDbSlotPool implements SlotPool {
  private readonly key: { readonly pk: string; readonly sk: string };

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly provider: ProviderName = LEGACY_PROVIDER,
    private readonly clock: () => Date = () => new Date(),
    /** The provider's declared rate (settings); absent: none, and one is learned from its throttling. */
    private readonly declared?: RateLimit,
  ) {
    this.key = slotPoolKey(provider);
  }

  async acquire(holder: string, limit: number, claim?: TenantClaim, token?: RateToken): Promise<boolean> {
    // A caller that read no pool (a search's query) has its token reckoned from a read here, and again
    // when another grant moved the rate's clock or count under it.
    let state = token ? undefined : await this.state();
    for (let reading = 1; ; reading++) {
      const at = this.clock();
      const decision = state ? rateTokenOf(state, at) : { token: token as RateToken };
      // No token to take (paused, probing, or the rate spent): the read says whether the holder has its slot.
      if (state && !('token' in decision)) return state.holders.includes(holder);
      if ('token' in decision) {
        try {
          await retryingConflicts(() =>
            this.client.send(
              new UpdateCommand({
                TableName: this.tableName,
                ...acquireUpdate(this.key, holder, limit, claim, at, decision.token),
              }),
            ),
          );
          return true;
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException)) throw error;
        }
      }
      // Full, paused, probing, out of tokens, capped, passed over, or this holder already has a slot (a
      // redelivered message): only the last may go on. A token read stale is reckoned again.
      const seen = await this.state();
      if (seen.holders.includes(holder)) return true;
      if (!state || !('token' in decision) || seen.holders.length >= limit || reading >= TOKEN_READINGS) {
        return false;
      }
      state = seen;
    }
  }

  async release(holder: string, tenant?: string): Promise<boolean> {
    const left = await this.giveBack(holder, tenant);
    if (left === 'last' && tenant !== undefined) await this.forgetIdlePass(tenant);
    return left !== 'not held';
  }

  async giveBack(holder: string, tenant?: string): Promise<SlotGiveBack> {
    try {
      const { Attributes } = await retryingConflicts(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: this.key,
            UpdateExpression: `ADD inFlight :minusOne DELETE holders :holder${tenant === undefined ? '' : ', #tenantHolders :holder'}`,
            ConditionExpression: 'contains(holders, :holderId)',
            ...(tenant === undefined
              ? {}
              : { ExpressionAttributeNames: { '#tenantHolders': tenantHoldersAttribute(tenant) } }),
            ExpressionAttributeValues: { ':minusOne': -1, ':holder': new Set([holder]), ':holderId': holder },
            // An emptied set is removed, so the tenant's holders missing from what changed means it holds none.
            ReturnValues: 'UPDATED_NEW',
          }),
        ),
      );
      return tenant !== undefined && Attributes?.[tenantHoldersAttribute(tenant)] === undefined
        ? 'last'
        : 'others held';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'not held';
      throw error;
    }
  }

  /**
   * Drops the pass of a tenant that holds no slot here and whose line does
   * not wait: a look at its marker (a cold item), then the pool's plain
   * conditional update on its holding none. A marker written between the two
   * loses the tenant at most one turn (`idlePassRemoval` says why that is
   * fair); a line retired later finds no slot held and drops the pass itself.
   */
  async forgetIdlePass(tenant: string): Promise<void> {
    if (await this.waits(tenant)) return;
    try {
      await retryingConflicts(() =>
        this.client.send(new UpdateCommand(idlePassRemoval(this.tableName, this.provider, tenant))),
      );
    } catch (error) {
      // It holds a slot again, or has no pass: nothing to drop.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /** Whether the tenant's line at this provider has a waiting marker: a read of a cold item, not the pool's. */
  private async waits(tenant: string): Promise<boolean> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: waitingMarkerKey(this.provider, tenant),
        ConsistentRead: true,
        ProjectionExpression: 'pk',
      }),
    );
    return Item !== undefined;
  }

  async pause(pause: ProviderPause): Promise<boolean> {
    try {
      await retryingConflicts(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: this.key,
            // A probe under way ends with the pause it met: the next one goes after this pause.
            UpdateExpression: `SET pausedUntil = :until, pauseSeconds = :seconds, pauseReason = :reason${
              pause.throttled ? ', throttledRate = :rate, throttledAt = :throttledAt' : ''
            }${pause.throttleAt === undefined ? '' : ', lastThrottleAt = :throttleAt'} REMOVE probeUntil, probing`,
            ConditionExpression: 'attribute_not_exists(pausedUntil) OR pausedUntil < :until',
            ExpressionAttributeValues: {
              ':until': pause.until.getTime(),
              ':seconds': pause.seconds,
              ':reason': pause.reason.slice(0, 500),
              ...(pause.throttled
                ? { ':rate': pause.throttled.perMinute, ':throttledAt': pause.throttled.at }
                : {}),
              ...(pause.throttleAt === undefined ? {} : { ':throttleAt': pause.throttleAt }),
            },
          }),
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async endProbe(holder: string, at: Date): Promise<boolean> {
    try {
      await retryingConflicts(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: this.key,
            // The probe's time is up now: the grants' condition (a probe that ended after its pause) holds.
            UpdateExpression: 'SET probeUntil = :now REMOVE probing',
            ConditionExpression: 'probing = :holder AND probeUntil > :now AND pausedUntil < :now',
            ExpressionAttributeValues: { ':holder': holder, ':now': at.getTime() },
          }),
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async resume(): Promise<void> {
    await retryingConflicts(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key,
          // An operator's word that the provider takes submissions: no probe first.
          UpdateExpression: 'REMOVE pausedUntil, pauseReason, probeUntil, probing',
        }),
      ),
    );
  }

  async holders(): Promise<readonly string[]> {
    return (await this.state()).holders;
  }

  async state(): Promise<SlotPoolState> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: this.key, ConsistentRead: true }),
    );
    const holders = Item?.holders as Set<string> | undefined;
    const tenantInFlight: Record<string, number> = {};
    const passes: Record<string, number> = {};
    for (const [name, value] of Object.entries(Item ?? {})) {
      if (name.startsWith(tenantHoldersAttribute(''))) {
        tenantInFlight[name.slice(tenantHoldersAttribute('').length)] = (value as Set<string>).size;
      } else if (name.startsWith(tenantPassAttribute(''))) {
        passes[name.slice(tenantPassAttribute('').length)] = Number(value);
      }
    }
    return {
      holders: holders ? [...holders] : [],
      tenantInFlight,
      passes,
      floor: Number(Item?.floor ?? 0),
      ...(Item?.pausedUntil === undefined ? {} : { pausedUntil: Number(Item.pausedUntil) }),
      ...(Item?.pauseReason === undefined ? {} : { pauseReason: String(Item.pauseReason) }),
      ...(Item?.pauseSeconds === undefined ? {} : { pauseSeconds: Number(Item.pauseSeconds) }),
      ...(Item?.probeUntil === undefined ? {} : { probeUntil: Number(Item.probeUntil) }),
      ...this.rateOf(Item),
    };
  }

  /** The rate's part of the pool as read, with the declared rate: absent when there is nothing of either. */
  private rateOf(item: Record<string, unknown> | undefined): { rate?: PoolRate } {
    const rate: PoolRate = {
      ...(this.declared ? { declared: this.declared } : {}),
      ...(item?.tat === undefined ? {} : { tat: Number(item.tat) }),
      ...(item?.throttledRate === undefined
        ? {}
        : { throttled: { perMinute: Number(item.throttledRate), at: Number(item.throttledAt) } }),
      ...(item?.lastThrottleAt === undefined ? {} : { lastThrottleAt: Number(item.lastThrottleAt) }),
      ...(item?.grantMinute === undefined
        ? {}
        : {
            grants: {
              minute: Number(item.grantMinute),
              count: Number(item.grantCount ?? 0),
              before: Number(item.grantsBefore ?? 0),
              ...(item.grantsSince === undefined ? {} : { since: Number(item.grantsSince) }),
            },
          }),
    };
    return Object.keys(rate).length ? { rate } : {};
  }
}
