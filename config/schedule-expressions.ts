/**
 * EventBridge Scheduler's recurring schedule expressions, `rate(…)` and
 * `cron(…)`, evaluated as Scheduler evaluates them: one home for the API's
 * validation, the `nextRunAt` it shows and the local stack's emulation of
 * Scheduler. Plain TypeScript; time zones come from `Intl`.
 *
 * What Scheduler documents, and so what this does:
 * - `rate(value unit)`: a positive whole number of minutes, hours or days
 *   (singular for 1, plural above), counted as fixed durations from the
 *   schedule's start (a day is 24 hours, even across a DST change).
 * - `cron(minutes hours day-of-month month day-of-week year)`: `,` `-` `*`
 *   `/` in every field; `?` in exactly one of day-of-month and day-of-week;
 *   `L` (last day of the month; in day-of-week `L` or `<day>L`, the month's
 *   last such weekday), `<day>W` (the weekday nearest that day of the month),
 *   `<day>#<n>` (the n-th such weekday of the month); months `JAN`-`DEC`,
 *   weekdays `SUN`-`SAT` (1 = Sunday … 7 = Saturday); years 1970-2199.
 * - Evaluated in the schedule's time zone: a time the clocks skip in spring
 *   is skipped, a time they repeat in autumn fires once (its first time).
 * Anything else is refused with the reason, never guessed at: wrap-around
 * ranges, `L`/`W`/`#` inside lists, and expressions that never fire again.
 */

/** Scheduler's own limit on `ScheduleExpression`. */
export const MAX_EXPRESSION_LENGTH = 256;

/** The year field's range, as Scheduler documents it. */
const YEARS = { min: 1970, max: 2199 } as const;

export class ScheduleExpressionError extends Error {
  override readonly name = 'ScheduleExpressionError';
}

export interface RateExpression {
  readonly kind: 'rate';
  readonly periodMs: number;
}

/** Which days of a month a cron fires on: one of its two day fields, the other being `?`. */
type DayRule =
  | { readonly kind: 'every' }
  | { readonly kind: 'monthDays'; readonly days: ReadonlySet<number> }
  | { readonly kind: 'lastDayOfMonth' }
  | { readonly kind: 'nearestWeekday'; readonly day: number }
  | { readonly kind: 'weekdays'; readonly weekdays: ReadonlySet<number> }
  | { readonly kind: 'lastWeekday'; readonly weekday: number }
  | { readonly kind: 'nthWeekday'; readonly weekday: number; readonly n: number };

export interface CronExpression {
  readonly kind: 'cron';
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly months: ReadonlySet<number>;
  readonly years: ReadonlySet<number>;
  readonly days: DayRule;
}

export type ScheduleExpression = RateExpression | CronExpression;

const RATE_UNITS: Readonly<Record<string, { readonly ms: number; readonly singular: boolean }>> = {
  minute: { ms: 60_000, singular: true },
  minutes: { ms: 60_000, singular: false },
  hour: { ms: 3_600_000, singular: true },
  hours: { ms: 3_600_000, singular: false },
  day: { ms: 86_400_000, singular: true },
  days: { ms: 86_400_000, singular: false },
};

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Names standing for min, min + 1, …, case-insensitive. */
  readonly names?: readonly string[];
}

const FIELDS = {
  minutes: { name: 'minutes', min: 0, max: 59 },
  hours: { name: 'hours', min: 0, max: 23 },
  dayOfMonth: { name: 'day-of-month', min: 1, max: 31 },
  month: { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  dayOfWeek: { name: 'day-of-week', min: 1, max: 7, names: WEEKDAY_NAMES },
  year: { name: 'year', min: YEARS.min, max: YEARS.max },
} as const satisfies Record<string, FieldSpec>;

/** Parses a schedule expression, or throws ScheduleExpressionError saying what Scheduler would refuse. */
export function parseScheduleExpression(text: string): ScheduleExpression {
  if (text.length > MAX_EXPRESSION_LENGTH) {
    throw new ScheduleExpressionError(`must be at most ${MAX_EXPRESSION_LENGTH} characters`);
  }
  const rate = /^rate\((.*)\)$/.exec(text);
  if (rate) return parseRate(rate[1] as string);
  const cron = /^cron\((.*)\)$/.exec(text);
  if (cron) return parseCron(cron[1] as string);
  throw new ScheduleExpressionError('must be rate(<value> <unit>) or cron(<6 fields>)');
}

function parseRate(body: string): RateExpression {
  const match = /^(\S+) (\S+)$/.exec(body);
  if (!match) throw new ScheduleExpressionError('rate must be rate(<value> <unit>), e.g. rate(5 minutes)');
  const [, value = '', unitName = ''] = match;
  const unit = RATE_UNITS[unitName];
  if (!unit) {
    throw new ScheduleExpressionError(
      /^seconds?$/.test(unitName)
        ? 'schedules run at most once a minute: use minutes, hours or days'
        : `rate unit must be minute(s), hour(s) or day(s), not ${unitName}`,
    );
  }
  if (!/^[1-9][0-9]{0,5}$/.test(value)) {
    throw new ScheduleExpressionError(
      value === '0'
        ? 'rate value must be at least 1: schedules run at most once a minute'
        : 'rate value must be a whole number from 1',
    );
  }
  const n = Number(value);
  if ((n === 1) !== unit.singular) {
    throw new ScheduleExpressionError(
      n === 1 ? `rate(1 ${unitName}) must use the singular unit` : `rate(${n} …) must use the plural unit`,
    );
  }
  return { kind: 'rate', periodMs: n * unit.ms };
}

function parseCron(body: string): CronExpression {
  const fields = body.trim().split(/\s+/);
  if (fields.length !== 6) {
    throw new ScheduleExpressionError(
      `cron must have 6 fields (minutes hours day-of-month month day-of-week year), found ${fields.length}`,
    );
  }
  const [minutes, hours, dayOfMonth, month, dayOfWeek, year] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if ((dayOfMonth === '?') === (dayOfWeek === '?')) {
    throw new ScheduleExpressionError('cron must have ? in exactly one of day-of-month and day-of-week');
  }
  const expression: CronExpression = {
    kind: 'cron',
    minutes: [...parseField(minutes, FIELDS.minutes)].sort((a, b) => a - b),
    hours: [...parseField(hours, FIELDS.hours)].sort((a, b) => a - b),
    months: parseField(month, FIELDS.month),
    years: parseField(year, FIELDS.year),
    days: dayOfMonth === '?' ? parseDayOfWeek(dayOfWeek) : parseDayOfMonth(dayOfMonth),
  };
  return expression;
}

function parseDayOfMonth(field: string): DayRule {
  if (field === '*') return { kind: 'every' };
  if (field === 'L') return { kind: 'lastDayOfMonth' };
  const nearest = /^([0-9]{1,2})W$/.exec(field);
  if (nearest) return { kind: 'nearestWeekday', day: value(nearest[1] as string, FIELDS.dayOfMonth) };
  if (/[LW]/i.test(field)) {
    throw new ScheduleExpressionError('day-of-month takes L or <day>W alone, e.g. L or 15W');
  }
  return { kind: 'monthDays', days: parseField(field, FIELDS.dayOfMonth) };
}

function parseDayOfWeek(field: string): DayRule {
  if (field === '*') return { kind: 'every' };
  // L alone is the last day of the week: Saturday.
  if (field === 'L') return { kind: 'weekdays', weekdays: new Set([7]) };
  const last = /^([0-9A-Za-z]+)L$/.exec(field);
  if (last) return { kind: 'lastWeekday', weekday: value(last[1] as string, FIELDS.dayOfWeek) };
  const nth = /^([0-9A-Za-z]+)#([0-9]+)$/.exec(field);
  if (nth) {
    const n = Number(nth[2]);
    if (!/^[1-5]$/.test(nth[2] as string)) {
      throw new ScheduleExpressionError('day-of-week <day>#<n> needs n from 1 to 5');
    }
    return { kind: 'nthWeekday', weekday: value(nth[1] as string, FIELDS.dayOfWeek), n };
  }
  if (field.includes('#') || /^L|[0-9]L|L,|,L/i.test(field)) {
    throw new ScheduleExpressionError('day-of-week takes L, <day>L or <day>#<n> alone, e.g. 6L or MON#2');
  }
  return { kind: 'weekdays', weekdays: parseField(field, FIELDS.dayOfWeek) };
}

/** A list of `*`, values, ranges and steps (`*`, `5`, `1-5`, `*\/15`, `0/15`, `10-40/10`). */
function parseField(field: string, spec: FieldSpec): Set<number> {
  const values = new Set<number>();
  for (const item of field.split(',')) {
    const match = /^([^/]+)(?:\/([0-9]+))?$/.exec(item);
    if (!match) throw new ScheduleExpressionError(`${spec.name} has an invalid item ${JSON.stringify(item)}`);
    const [, range = '', stepText] = match;
    const step = stepText === undefined ? 1 : Number(stepText);
    if (
      step < 1 ||
      step > spec.max - spec.min + 1 ||
      (stepText !== undefined && !/^[1-9][0-9]*$/.test(stepText))
    ) {
      throw new ScheduleExpressionError(`${spec.name} step must be from 1 to ${spec.max - spec.min + 1}`);
    }
    let from: number;
    let to: number;
    if (range === '*') {
      from = spec.min;
      to = spec.max;
    } else if (range.includes('-')) {
      const [a = '', b = '', ...rest] = range.split('-');
      if (rest.length > 0) throw new ScheduleExpressionError(`${spec.name} has an invalid range ${item}`);
      from = value(a, spec);
      to = value(b, spec);
      if (from > to) {
        throw new ScheduleExpressionError(
          `${spec.name} range ${range} runs backwards; write it as two ranges in a list`,
        );
      }
    } else {
      from = value(range, spec);
      // `a/n` runs from a to the end of the field, as in `0/15`.
      to = stepText === undefined ? from : spec.max;
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return values;
}

function value(text: string, spec: FieldSpec): number {
  const named = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (named >= 0) return spec.min + named;
  if (!/^[0-9]{1,4}$/.test(text)) {
    throw new ScheduleExpressionError(
      `${spec.name} value ${JSON.stringify(text)} is not a number${spec.names ? ` or a name (${spec.names[0]}-${spec.names.at(-1)})` : ''}`,
    );
  }
  const n = Number(text);
  if (n < spec.min || n > spec.max) {
    throw new ScheduleExpressionError(`${spec.name} value ${n} is outside ${spec.min}-${spec.max}`);
  }
  return n;
}

/** Whether `name` is an IANA time zone this runtime knows (as Scheduler's `ScheduleExpressionTimezone` must be). */
export function isTimeZone(name: string): boolean {
  if (name.length === 0 || name.length > 50) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * The first time strictly after `after` at which the expression fires, or
 * undefined when it never fires again. A rate fires at `start`, then every
 * period from it; a cron fires on whole minutes of its time zone's wall clock.
 */
export function nextRunAfter(
  expression: ScheduleExpression,
  timezone: string,
  after: Date,
  start: Date,
): Date | undefined {
  if (expression.kind === 'rate') {
    const elapsed = after.getTime() - start.getTime();
    if (elapsed < 0) return new Date(start.getTime());
    return new Date(start.getTime() + (Math.floor(elapsed / expression.periodMs) + 1) * expression.periodMs);
  }
  return nextCronRun(expression, timezone, after);
}

const DAY_MS = 86_400_000;

function nextCronRun(cron: CronExpression, timezone: string, after: Date): Date | undefined {
  const local = wallClock(after.getTime(), timezone);
  let day = Date.UTC(local.year, local.month - 1, local.day);
  for (;;) {
    const date = new Date(day);
    const year = date.getUTCFullYear();
    const month = date.getUTCMonth() + 1;
    if (year > YEARS.max) return undefined;
    if (!cron.years.has(year)) {
      day = Date.UTC(year + 1, 0, 1);
      continue;
    }
    if (!cron.months.has(month)) {
      day = Date.UTC(year, month, 1);
      continue;
    }
    if (firesOnDay(cron.days, year, month, date.getUTCDate())) {
      for (const hour of cron.hours) {
        for (const minute of cron.minutes) {
          const at = zonedTime(year, month, date.getUTCDate(), hour, minute, timezone);
          if (at !== undefined && at > after.getTime()) return new Date(at);
        }
      }
    }
    day += DAY_MS;
  }
}

function firesOnDay(rule: DayRule, year: number, month: number, day: number): boolean {
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  // 1 = Sunday … 7 = Saturday, as cron numbers them.
  const weekday = (y: number, d: number) => new Date(Date.UTC(y, month - 1, d)).getUTCDay() + 1;
  switch (rule.kind) {
    case 'every':
      return true;
    case 'monthDays':
      return rule.days.has(day);
    case 'lastDayOfMonth':
      return day === lastDay;
    case 'nearestWeekday':
      return rule.day <= lastDay && day === nearestWeekday(rule.day, lastDay, weekday(year, rule.day));
    case 'weekdays':
      return rule.weekdays.has(weekday(year, day));
    case 'lastWeekday':
      return weekday(year, day) === rule.weekday && day + 7 > lastDay;
    case 'nthWeekday':
      return weekday(year, day) === rule.weekday && Math.ceil(day / 7) === rule.n;
  }
}

/** The weekday nearest `day` without leaving the month (Saturday → Friday, Sunday → Monday). */
function nearestWeekday(day: number, lastDay: number, weekday: number): number {
  if (weekday === 7) return day === 1 ? 3 : day - 1;
  if (weekday === 1) return day === lastDay ? day - 2 : day + 1;
  return day;
}

interface WallClock {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function wallClock(instant: number, timezone: string): WallClock {
  let formatter = formatters.get(timezone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timezone, formatter);
  }
  const parts = Object.fromEntries(
    formatter.formatToParts(new Date(instant)).map((part) => [part.type, Number(part.value)]),
  );
  return {
    year: parts.year as number,
    month: parts.month as number,
    day: parts.day as number,
    hour: parts.hour as number,
    minute: parts.minute as number,
    second: parts.second as number,
  };
}

/** The zone's offset from UTC at an instant, in ms. */
function offsetAt(instant: number, timezone: string): number {
  const w = wallClock(instant, timezone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/**
 * The instant a wall-clock time of the zone names: the earlier one when the
 * clocks repeat it, undefined when they skip it.
 */
function zonedTime(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  timezone: string,
): number | undefined {
  const wall = Date.UTC(year, month - 1, day, hour, minute);
  const offsets = new Set([offsetAt(wall - DAY_MS, timezone), offsetAt(wall + DAY_MS, timezone)]);
  const instants = [...offsets]
    .map((offset) => wall - offset)
    .filter((instant) => offsetAt(instant, timezone) === wall - instant);
  return instants.length === 0 ? undefined : Math.min(...instants);
}
