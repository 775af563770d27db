import { randomBytes } from 'node:crypto';
import type { TaskAttempt } from './tasks';

/**
 * Task tokens of the attempts waiting for a callback. A token names its
 * execution, so one that is no longer active (its task finished or timed
 * out, its execution stopped, or the emulator restarted since) is told apart
 * from one that was never issued, as Step Functions tells TaskTimedOut from
 * InvalidToken.
 */
export class TaskTokens {
  private readonly active = new Map<string, TaskAttempt>();

  issue(executionArn: string): string {
    return `${Buffer.from(executionArn).toString('base64url')}.${randomBytes(32).toString('base64url')}`;
  }

  register(token: string, attempt: TaskAttempt): void {
    this.active.set(token, attempt);
  }

  revoke(token: string): void {
    this.active.delete(token);
  }

  /** The waiting attempt, if the token is still active. */
  waiting(token: string): TaskAttempt | undefined {
    const attempt = this.active.get(token);
    return attempt && !attempt.settled ? attempt : undefined;
  }

  /** The execution a well-formed token was issued for, whether or not it is still active. */
  static executionArnOf(token: string): string | undefined {
    const [encodedArn, nonce, ...rest] = token.split('.');
    if (!encodedArn || !nonce || rest.length > 0 || !/^[A-Za-z0-9_-]{43}$/.test(nonce)) return undefined;
    const executionArn = Buffer.from(encodedArn, 'base64url').toString();
    return /^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:execution:[^:]+:[^:]+$/.test(executionArn)
      ? executionArn
      : undefined;
  }
}
