import { GetExecutionHistoryCommand } from '@aws-sdk/client-sfn';
import type { Job } from '../../../client';
import { mediaBinaries, runTool } from '../../../lambdas/adapters/ffmpeg-media';
import { executionNameOf } from '../../../lambdas/domain/job';
import { type LocalEndpoints, sfnClient } from '../../../local/harness/local-stack';

/**
 * Plays a stream with ffmpeg as a player would (no headers), from `fromSeconds`
 * to its end, and answers how long it played. Seeking is an output option:
 * ffmpeg decodes up to the start and plays from there, because the bundled
 * ffmpeg's HLS demuxer cannot seek within fMP4 segments as an input option.
 */
export async function playedSeconds(url: string, fromSeconds = 0): Promise<number> {
  const run = await runTool(
    mediaBinaries().ffmpeg,
    [
      ...['-nostdin', '-hide_banner', '-v', 'info', '-stats', '-i', url],
      ...(fromSeconds > 0 ? ['-ss', String(fromSeconds)] : []),
      ...['-map', '0:a:0', '-f', 'null', '-'],
    ],
    { timeoutMs: 60_000 },
  );
  if (run.exitCode !== 0) throw new Error(`ffmpeg could not play ${url}: ${run.stderr.slice(-2000)}`);
  const last = [...run.stderr.matchAll(/time=(\d+):(\d+):(\d+(?:\.\d+)?)/g)].at(-1);
  if (!last) throw new Error(`ffmpeg reported no time: ${run.stderr.slice(-2000)}`);
  return Number(last[1]) * 3600 + Number(last[2]) * 60 + Number(last[3]);
}

/** The states the job's execution entered, in order, from Step Functions' history of it. */
export async function statesEntered(endpoints: LocalEndpoints, job: Job): Promise<string[]> {
  const executionArn = `${endpoints.stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionNameOf(job as Parameters<typeof executionNameOf>[0])}`;
  const history = await sfnClient(endpoints).send(
    new GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }),
  );
  return (history.events ?? []).flatMap((event) =>
    event.stateEnteredEventDetails?.name ? [event.stateEnteredEventDetails.name] : [],
  );
}
