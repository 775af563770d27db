import { resolve } from 'node:path';
import { PROBLEM_CODES as CLIENT_PROBLEM_CODES } from '../../client/types';
import { gatewayProblems, PROBLEM_CODES, problems } from '../../config/problems';
import { KNOWN, problemCodesIn, problemCodesUnder, TYPE_PREFIX } from './support/problem-code-scan';

/**
 * config/problems.ts is the one table of problem codes; a code named where
 * the compiler cannot check it against the table is found by reading the
 * source.
 */

const ROOT = resolve(__dirname, '../..');
const uses = problemCodesUnder(ROOT, ['lambdas', 'lib', 'local', 'client']);

describe('the problem table', () => {
  it('gives every code a 4xx or 5xx status and a title', () => {
    for (const { status, title } of Object.values(problems)) {
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
      expect(title).toMatch(/^[A-Z]/);
    }
  });

  it('titles every gateway response with its code, as every other answer of that code is', () => {
    for (const answer of Object.values(gatewayProblems)) {
      expect(answer.title).toBe(problems[answer.code].title);
      expect(answer.type).toBe(`${TYPE_PREFIX}${answer.code}`);
    }
  });

  it('is the list of codes the SDK knows', () => {
    expect([...CLIENT_PROBLEM_CODES]).toEqual(PROBLEM_CODES);
  });
});

describe('problem codes named in lambdas/, lib/, local/ and client/', () => {
  it('are all in the table', () => {
    expect(uses.filter((u) => !KNOWN.has(u.code))).toEqual([]);
  });

  it('are found where they are named', () => {
    expect(uses).toEqual(
      expect.arrayContaining([
        { file: 'lambdas/api/problems.ts', line: expect.any(Number), code: 'job-not-resumable' },
        { file: 'local/ops/index.ts', line: expect.any(Number), code: 'not-found' },
        { file: 'client/types.ts', line: expect.any(Number), code: 'service-unavailable' },
      ]),
    );
  });

  it.each([
    ["problem('job-not-finished', 'x')", 'the first argument of problem()'],
    ["const type = 'urn:longhaul:problem:job-gone';", 'a type URI'],
    ["if (answer.problem?.code === 'key-in-use') retry();", "a comparison with a problem's code"],
    ["send({ type: 'urn:x', title: 'Gone', status: 410, code: 'job-gone' });", 'a hand-written problem'],
    ["const codes = ['not-found', 'forbidden', 'job-gone'] as const;", 'a list of codes'],
    ["type Code = 'not-found' | 'forbidden' | 'job-gone';", 'a union of codes'],
    ["const statuses = { 'not-found': 404, forbidden: 403, 'job-gone': 410 };", 'a record keyed by code'],
  ])('catches a code not in the table in %s (%s)', (source) => {
    expect(problemCodesIn('example.ts', source).filter((u) => !KNOWN.has(u.code))).toEqual([
      {
        file: 'example.ts',
        line: 1,
        code: expect.stringMatching(/^(job-not-finished|job-gone|key-in-use)$/),
      },
    ]);
  });

  it("leaves the SDK's own problems alone: they are typed about:blank", () => {
    expect(
      problemCodesIn(
        'example.ts',
        "const p = { type: 'about:blank', title: 'T', status: 0, code: 'aborted' };",
      ),
    ).toEqual([]);
  });

  it("leaves other lists alone: a replay's refusals share one name with the table", () => {
    expect(
      problemCodesIn('example.ts', "type Refusal = 'needs-review' | 'tenant-queue-full' | 'key-taken';"),
    ).toEqual([]);
  });
});
