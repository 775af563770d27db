import { SFNClient } from '@aws-sdk/client-sfn';
import { resourceEnv } from '../../../config/layout';
import { SfnWorkflow } from '../../adapters/sfn-workflow';
import { once } from '../once';

/** Task tokens work without the state machine ARN, so functions that only resume steps need not know it. */
export const workflow = once(
  () => new SfnWorkflow(new SFNClient({}), process.env[resourceEnv.stateMachineArn]),
);
