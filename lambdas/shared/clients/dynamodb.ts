import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { once } from '../once';

/**
 * The DynamoDB document client every table adapter shares. Like every client
 * here, its endpoint comes from the SDK's standard environment
 * (AWS_ENDPOINT_URL_*), which is all that differs locally.
 */
export const documentClient = once(() =>
  DynamoDBDocumentClient.from(new DynamoDBClient({}), {
    marshallOptions: { removeUndefinedValues: true },
  }),
);
