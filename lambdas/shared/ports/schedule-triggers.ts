import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { resourceEnv } from '../../../config/layout';
import { SchedulerScheduleTriggers } from '../../adapters/scheduler-schedule-triggers';
import { requireEnv, runtimeSettings } from '../env';
import { once } from '../once';

/** The EventBridge Scheduler schedules that fire tenants' schedules. */
export const scheduleTriggers = once(
  () =>
    new SchedulerScheduleTriggers(new SchedulerClient({}), {
      groupName: requireEnv(resourceEnv.scheduleGroup),
      targetArn: requireEnv(resourceEnv.scheduleTargetArn),
      roleArn: requireEnv(resourceEnv.scheduleRoleArn),
      deadLetterQueueArn: requireEnv(resourceEnv.scheduleDeadLetterQueueArn),
      retryAttempts: runtimeSettings().scheduleRetryAttempts,
      maxEventAgeSeconds: runtimeSettings().scheduleMaxEventAgeSeconds,
    }),
);
