/**
 * Amazon S3 Vectors' limits: one home for the construct that makes the index
 * (lib/constructs/search-index.ts), the settings that size what goes into it
 * (config/settings.ts) and the local emulator that holds requests to them
 * (local/emulators/s3-vectors.ts). As documented on 6 December 2026:
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-limitations.html,
 * the API model of `@aws-sdk/client-s3vectors` (name lengths, key length,
 * list sizes) and the QueryVectors pagination of 16 June 2026
 * (https://awsapichanges.com/archive/changes/e078c6-s3vectors.html, up to
 * 10,000 results a query in pages of up to 100).
 */
export const S3_VECTORS_LIMITS = {
  vectorBucketsPerRegion: 10_000,
  indexesPerBucket: 10_000,
  minDimension: 1,
  maxDimension: 4096,
  /** Filterable and non-filterable metadata of one vector together, in bytes of its JSON. */
  metadataBytes: 40 * 1024,
  /** Filterable metadata of one vector, in bytes of its JSON. */
  filterableMetadataBytes: 2 * 1024,
  metadataKeysPerVector: 50,
  nonFilterableKeysPerIndex: 10,
  metadataKeyLength: 63,
  vectorKeyLength: 1024,
  /** PutVectors and DeleteVectors requests to one index, together, per second. */
  writeRequestsPerSecond: 1000,
  /** Vectors put and deleted in one index, together, per second. */
  writtenVectorsPerSecond: 2500,
  requestBytes: 20 * 1024 * 1024,
  vectorsPerPut: 500,
  keysPerDelete: 500,
  keysPerGet: 100,
  topK: 10_000,
  /** Filter constraints of one query: each value a condition evaluates counts one (a `$in` of three is three). */
  filterConstraintsPerQuery: 100,
  queryResultsPerPage: 100,
  listResultsPerPage: 1000,
  listResultsDefault: 500,
  /** ListVectors stops a page once it has gone through this much data. */
  listPageBytes: 1024 * 1024,
  listSegments: 16,
} as const;
