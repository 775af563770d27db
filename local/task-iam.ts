import { TASK_IAM_ENV, type TaskIam } from './ecs';
import { checkRequests, PrincipalPolicies } from './iam';

/**
 * Loaded before a local ECS task's own code (`node --import`): IAM as AWS
 * applies it to the task, every AWS call the task makes checked against the
 * policies of its task definition's task role, which the local stack
 * resolved and handed over in TASK_IAM_ENV. The task never sees that
 * variable, as a task in AWS sees no policy.
 */

const handedOver = process.env[TASK_IAM_ENV];
if (handedOver !== undefined) {
  delete process.env[TASK_IAM_ENV];
  const iam = JSON.parse(handedOver) as TaskIam;
  const policies = new PrincipalPolicies(iam.principal, iam.policies);
  checkRequests({
    scope: iam.scope,
    principal: () => ({ name: 'ecs task', policies }),
    log: (line) => console.error(line),
  });
}
