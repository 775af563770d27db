import {
  isTimeZone,
  nextRunAfter,
  parseScheduleExpression,
  ScheduleExpressionError,
} from '../../config/schedule-expressions';

/** The next `count` runs after `from`, as ISO strings. */
function runs(expression: string, timezone: string, from: string, count = 3): string[] {
  const parsed = parseScheduleExpression(expression);
  const start = new Date(from);
  const out: string[] = [];
  let after = new Date(from);
  for (let i = 0; i < count; i++) {
    const next = nextRunAfter(parsed, timezone, after, start);
    if (!next) break;
    out.push(next.toISOString());
    after = next;
  }
  return out;
}

describe('rate expressions', () => {
  it('fire every period from the start, as fixed durations', () => {
    const start = new Date('2026-03-07T12:00:00Z');
    const rate = parseScheduleExpression('rate(1 day)');
    // Across New York's spring change a day is still 24 hours.
    expect(nextRunAfter(rate, 'America/New_York', new Date('2026-03-08T11:00:00Z'), start)).toEqual(
      new Date('2026-03-08T12:00:00Z'),
    );
    expect(nextRunAfter(rate, 'UTC', new Date('2026-03-07T11:00:00Z'), start)).toEqual(start);
    expect(runs('rate(5 minutes)', 'UTC', '2026-01-01T00:00:00Z')).toEqual([
      '2026-01-01T00:05:00.000Z',
      '2026-01-01T00:10:00.000Z',
      '2026-01-01T00:15:00.000Z',
    ]);
    expect(runs('rate(2 hours)', 'UTC', '2026-01-01T00:30:00Z', 1)).toEqual(['2026-01-01T02:30:00.000Z']);
  });

  it.each([
    ['rate(0 minutes)', 'rate value must be at least 1: schedules run at most once a minute'],
    ['rate(30 seconds)', 'schedules run at most once a minute: use minutes, hours or days'],
    ['rate(1 minutes)', 'rate(1 minutes) must use the singular unit'],
    ['rate(5 minute)', 'rate(5 …) must use the plural unit'],
    ['rate(1.5 hours)', 'rate value must be a whole number from 1'],
    ['rate(-1 hours)', 'rate value must be a whole number from 1'],
    ['rate(2 weeks)', 'rate unit must be minute(s), hour(s) or day(s), not weeks'],
    ['rate(5minutes)', 'rate must be rate(<value> <unit>), e.g. rate(5 minutes)'],
  ])('refuses %s', (expression, reason) => {
    expect(() => parseScheduleExpression(expression)).toThrow(new ScheduleExpressionError(reason));
  });
});

describe('cron expressions', () => {
  it('fire on the listed minutes, hours, ranges and steps', () => {
    expect(runs('cron(0/15 9-10 * * ? *)', 'UTC', '2026-01-01T10:40:00Z', 3)).toEqual([
      '2026-01-01T10:45:00.000Z',
      '2026-01-02T09:00:00.000Z',
      '2026-01-02T09:15:00.000Z',
    ]);
    expect(runs('cron(*/20 8 * * ? *)', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T08:00:00.000Z',
      '2026-01-01T08:20:00.000Z',
      '2026-01-01T08:40:00.000Z',
    ]);
    expect(runs('cron(5,35 12 1 JAN,jul ? 2027-2028)', 'UTC', '2026-06-01T00:00:00Z', 3)).toEqual([
      '2027-01-01T12:05:00.000Z',
      '2027-01-01T12:35:00.000Z',
      '2027-07-01T12:05:00.000Z',
    ]);
  });

  it('fire on weekdays by number and by name (1 = Sunday)', () => {
    // 2026-01-01 is a Thursday.
    expect(runs('cron(0 9 ? * MON-FRI *)', 'UTC', '2026-01-02T10:00:00Z', 2)).toEqual([
      '2026-01-05T09:00:00.000Z',
      '2026-01-06T09:00:00.000Z',
    ]);
    expect(runs('cron(0 9 ? * 1 *)', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T09:00:00.000Z']);
  });

  it('understands L, W and #', () => {
    expect(runs('cron(0 0 L * ? *)', 'UTC', '2026-01-31T12:00:00Z', 2)).toEqual([
      '2026-02-28T00:00:00.000Z',
      '2026-03-31T00:00:00.000Z',
    ]);
    // The last Friday of January and February 2026.
    expect(runs('cron(0 18 ? * 6L *)', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual([
      '2026-01-30T18:00:00.000Z',
      '2026-02-27T18:00:00.000Z',
    ]);
    // The second Tuesday.
    expect(runs('cron(30 7 ? * TUE#2 *)', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual([
      '2026-01-13T07:30:00.000Z',
      '2026-02-10T07:30:00.000Z',
    ]);
    // 2026-02-15 is a Sunday: the nearest weekday is Monday the 16th; 2026-08-01 is a Saturday,
    // and 1W stays in the month: Monday the 3rd.
    expect(runs('cron(0 6 15W * ? *)', 'UTC', '2026-02-01T00:00:00Z', 1)).toEqual([
      '2026-02-16T06:00:00.000Z',
    ]);
    expect(runs('cron(0 6 1W AUG ? *)', 'UTC', '2026-07-01T00:00:00Z', 1)).toEqual([
      '2026-08-03T06:00:00.000Z',
    ]);
    // L alone in day-of-week is Saturday.
    expect(runs('cron(0 0 ? * L *)', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-03T00:00:00.000Z']);
  });

  it('evaluates in the time zone, skipping the hour DST skips and firing once in the hour it repeats', () => {
    expect(runs('cron(0 9 * * ? *)', 'Europe/Berlin', '2026-01-01T00:00:00Z', 1)).toEqual([
      '2026-01-01T08:00:00.000Z',
    ]);
    expect(runs('cron(0 9 * * ? *)', 'Europe/Berlin', '2026-07-01T00:00:00Z', 1)).toEqual([
      '2026-07-01T07:00:00.000Z',
    ]);
    // New York springs forward at 02:00 on 2026-03-08: 02:30 does not exist that day.
    expect(runs('cron(30 2 * * ? *)', 'America/New_York', '2026-03-07T00:00:00Z', 2)).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
    // It falls back at 02:00 on 2026-11-01: 01:30 happens twice and fires once, at the first.
    expect(runs('cron(30 1 * * ? *)', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
    expect(runs('cron(0,30 * * * ? *)', 'America/New_York', '2026-11-01T05:10:00Z', 4)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T07:00:00.000Z',
      '2026-11-01T07:30:00.000Z',
      '2026-11-01T08:00:00.000Z',
    ]);
    // Half-hour zones.
    expect(runs('cron(0 0 * * ? *)', 'Asia/Kolkata', '2026-01-01T00:00:00Z', 1)).toEqual([
      '2026-01-01T18:30:00.000Z',
    ]);
  });

  it('says when an expression never fires again', () => {
    expect(runs('cron(0 0 30 FEB ? *)', 'UTC', '2026-01-01T00:00:00Z')).toEqual([]);
    expect(runs('cron(0 0 1 1 ? 2020)', 'UTC', '2026-01-01T00:00:00Z')).toEqual([]);
  });

  it.each([
    [
      'cron(0 12 * * *)',
      'cron must have 6 fields (minutes hours day-of-month month day-of-week year), found 5',
    ],
    ['cron(0 12 * * * *)', 'cron must have ? in exactly one of day-of-month and day-of-week'],
    ['cron(0 12 ? * ? *)', 'cron must have ? in exactly one of day-of-month and day-of-week'],
    ['cron(60 12 * * ? *)', 'minutes value 60 is outside 0-59'],
    ['cron(0 24 * * ? *)', 'hours value 24 is outside 0-23'],
    ['cron(0 0 0 * ? *)', 'day-of-month value 0 is outside 1-31'],
    ['cron(0 0 ? * 8 *)', 'day-of-week value 8 is outside 1-7'],
    ['cron(0 0 ? FOO * *)', 'month value "FOO" is not a number or a name (JAN-DEC)'],
    ['cron(0 0 * * ? 1969)', 'year value 1969 is outside 1970-2199'],
    ['cron(0 22-2 * * ? *)', 'hours range 22-2 runs backwards; write it as two ranges in a list'],
    ['cron(0/0 * * * ? *)', 'minutes step must be from 1 to 60'],
    ['cron(0 0 L,15 * ? *)', 'day-of-month takes L or <day>W alone, e.g. L or 15W'],
    ['cron(0 0 ? * 2#6 *)', 'day-of-week <day>#<n> needs n from 1 to 5'],
    ['cron(0 0 ? * 2#1,3 *)', 'day-of-week takes L, <day>L or <day>#<n> alone, e.g. 6L or MON#2'],
    ['cron(0 0 ? * 9L *)', 'day-of-week value 9 is outside 1-7'],
    ['every 5 minutes', 'must be rate(<value> <unit>) or cron(<6 fields>)'],
    [`cron(${'0,'.repeat(130)}0 * * * ? *)`, 'must be at most 256 characters'],
  ])('refuses %s', (expression, reason) => {
    expect(() => parseScheduleExpression(expression)).toThrow(new ScheduleExpressionError(reason));
  });
});

describe('time zones', () => {
  it('accepts IANA names and refuses the rest', () => {
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('America/Argentina/Buenos_Aires')).toBe(true);
    expect(isTimeZone('Mars/Olympus_Mons')).toBe(false);
    expect(isTimeZone('')).toBe(false);
  });
});
