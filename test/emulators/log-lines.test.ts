import { printHandlerLogs, shortLogLine } from '../../local/log-lines';

/**
 * How the local stack prints the handlers' Powertools records: one short line
 * each by default, the record's JSON on one line with LOG_FORMAT=json, and
 * every other write untouched.
 */

const record = {
  level: 'INFO',
  message: 'job accepted',
  timestamp: '2026-01-02T12:00:01.234Z',
  service: 'Longhaul',
  cold_start: false,
  function_name: 'longhaul-api',
  function_request_id: 'c0ffee',
  sampling_rate: 0,
  tenantId: 'acme',
  route: 'POST /v1/jobs',
  jobId: 'job_abc',
  filter: { status: ['queued'] },
};

/** A stream that keeps what is written to it. */
function fakeStream() {
  const written: string[] = [];
  const stream = {
    write: (chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  return { stream, written };
}

describe('shortLogLine', () => {
  it('says time, function, level and message, then the record’s own scalar keys', () => {
    const line = shortLogLine(record);

    expect(line).toMatch(/^\d\d:\d\d:01\.234 /);
    expect(line.slice(13)).toBe(
      'api             INFO  job accepted tenantId=acme route="POST /v1/jobs" jobId=job_abc',
    );
  });

  it('names an error by its name and message, on the same line', () => {
    const line = shortLogLine({
      ...record,
      level: 'ERROR',
      message: 'request failed',
      function_name: 'longhaul-dispatch',
      error: { name: 'TypeError', message: 'not\na function', stack: 'TypeError: …\n    at x' },
    });

    expect(line).not.toContain('\n');
    expect(line).toContain('dispatch        ERROR request failed');
    expect(line).toContain('error="TypeError: not\\na function"');
    expect(line).not.toContain('at x');
  });
});

describe('what an outage prints', () => {
  it('shows a pause with its provider, until when and why, after the keys the steps function appends', () => {
    const { tenantId: _tenant, route: _route, filter: _filter, jobId: _job, ...standard } = record;
    const line = shortLogLine({
      ...standard,
      level: 'WARN',
      message: 'provider paused',
      function_name: 'longhaul-workflow',
      jobId: 'job_abc',
      step: 'submit',
      executionName: 'job_abc-m9x2k1-run1',
      provider: 'bedrock',
      until: '2026-01-02T12:00:08.000Z',
      reason: 'bedrock answered ThrottlingException (429) to call 3; the 2 answered before it are kept.',
    });

    expect(line.slice(13)).toBe(
      'workflow        WARN  provider paused jobId=job_abc step=submit executionName=job_abc-m9x2k1-run1 ' +
        'provider=bedrock until=2026-01-02T12:00:08.000Z ' +
        'reason="bedrock answered ThrottlingException (429) to call 3; the 2 answered before it are kept."',
    );
  });
});

describe('printHandlerLogs', () => {
  it('prints an indented record as one short line, and leaves other writes alone', () => {
    const { stream, written } = fakeStream();
    const restore = printHandlerLogs('short', [stream]);
    stream.write(`${JSON.stringify(record, null, 4)}\n`);
    stream.write('longhaul local: ready at http://127.0.0.1:3000\n');
    stream.write('{"_aws":{"Timestamp":1,"CloudWatchMetrics":[]}}\n');
    restore();

    expect(written).toEqual([
      `${shortLogLine(record)}\n`,
      'longhaul local: ready at http://127.0.0.1:3000\n',
      '{"_aws":{"Timestamp":1,"CloudWatchMetrics":[]}}\n',
    ]);
  });

  it('with json prints the record itself on one line', () => {
    const { stream, written } = fakeStream();
    const restore = printHandlerLogs('json', [stream]);
    stream.write(`${JSON.stringify(record, null, 4)}\n`);
    restore();

    expect(written).toEqual([`${JSON.stringify(record)}\n`]);
  });

  it('puts the stream’s own write back', () => {
    const { stream } = fakeStream();
    const own = stream.write;
    printHandlerLogs('short', [stream])();

    expect(stream.write).toBe(own);
  });
});
