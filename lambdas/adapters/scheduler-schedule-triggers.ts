import {
  ConflictException,
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  type SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import type { Firing, Schedule, ScheduleTriggers } from '../domain/schedules';

export interface SchedulerTriggerOptions {
  /** The schedule group every trigger lives in (created by the stack). */
  readonly groupName: string;
  /** The fire function. */
  readonly targetArn: string;
  /** The role Scheduler invokes it with; it may invoke nothing else. */
  readonly roleArn: string;
  /** Where Scheduler puts a firing it could not deliver. */
  readonly deadLetterQueueArn: string;
  readonly retryAttempts: number;
  readonly maxEventAgeSeconds: number;
}

/**
 * Each Longhaul schedule as one EventBridge Scheduler schedule, named by its
 * id (ids are unique across tenants, derived from tenant and key) in the
 * stack's group, evaluated in the schedule's time zone and invoking the fire
 * function with the tenant, the schedule and Scheduler's scheduled time.
 */
export class SchedulerScheduleTriggers implements ScheduleTriggers {
  constructor(
    private readonly client: SchedulerClient,
    private readonly options: SchedulerTriggerOptions,
  ) {}

  async put(schedule: Schedule, firstRunAt: Date | undefined): Promise<void> {
    const input: CreateScheduleCommandInput = {
      Name: schedule.id,
      GroupName: this.options.groupName,
      ScheduleExpression: schedule.expression,
      ScheduleExpressionTimezone: schedule.timezone,
      ...(firstRunAt ? { StartDate: firstRunAt } : {}),
      State: schedule.enabled ? 'ENABLED' : 'DISABLED',
      // Each firing is one job at its time; spreading them would move the time in the job's key.
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: {
        Arn: this.options.targetArn,
        RoleArn: this.options.roleArn,
        Input: JSON.stringify({
          tenantId: schedule.tenantId,
          scheduleId: schedule.id,
          scheduledTime: '<aws.scheduler.scheduled-time>',
        } satisfies Firing),
        RetryPolicy: {
          MaximumRetryAttempts: this.options.retryAttempts,
          MaximumEventAgeInSeconds: this.options.maxEventAgeSeconds,
        },
        DeadLetterConfig: { Arn: this.options.deadLetterQueueArn },
      },
    };
    try {
      await this.client.send(new CreateScheduleCommand(input));
    } catch (error) {
      // It exists (a replay, an enable, a disable): UpdateSchedule replaces all of it.
      if (!(error instanceof ConflictException)) throw error;
      await this.client.send(new UpdateScheduleCommand(input));
    }
  }

  async remove(scheduleId: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteScheduleCommand({ Name: scheduleId, GroupName: this.options.groupName }),
      );
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw error;
    }
  }
}
