import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type * as z from 'zod';
import { OPENAPI_YAML_PATH, renderOpenApiYaml } from '../../client/scripts/openapi';
import { jobTypeModule } from '../../config/job-types';
import { allRoutes } from '../../config/layout';
import {
  createMediaRequest,
  createVersionRequest,
  listMediaQuery,
  mediaItemView,
  updateMediaRequest,
} from '../../config/media';
import { searchRequest, searchResult } from '../../config/search';
import { type OperationObject, openApiDocument, PROBLEM_CODES } from '../../lambdas/api/openapi';
import { openApiSchemaAjv } from '../support/openapi-ajv';

/**
 * The OpenAPI document: valid OpenAPI 3.1, complete against the routes the
 * gateway serves, consistent in itself, and committed as openapi.yaml.
 */

// The official OpenAPI 3.1 schema, as the validator package ships it for ajv.
const OAS_31_SCHEMA = require('@seriousme/openapi-schema-validator/schemas/v3.1/schema.json');

const doc = JSON.parse(JSON.stringify(openApiDocument));
const operations: [string, string, OperationObject][] = Object.entries(openApiDocument.paths).flatMap(
  ([path, item]) =>
    Object.entries(item).map(
      ([method, operation]) => [path, method, operation] as [string, string, OperationObject],
    ),
);

const schemaAjv = () => openApiSchemaAjv(doc);

describe('openapi.yaml', () => {
  it('is the document rendered from lambdas/api/openapi.ts (run `npm run openapi` after changing it)', () => {
    expect(readFileSync(OPENAPI_YAML_PATH, 'utf8')).toBe(renderOpenApiYaml());
  });
});

describe('the OpenAPI document', () => {
  it('is valid against the OpenAPI 3.1 schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    // RFC 9110 media ranges, the keys of content maps.
    ajv.addFormat('media-range', /^[\w.+*-]+\/[\w.+*-]+(\s*;.*)?$/);
    const validate = ajv.compile(OAS_31_SCHEMA);
    expect({ valid: validate(doc), errors: validate.errors ?? null }).toEqual({ valid: true, errors: null });
  });

  it('has every reference resolve inside the document', () => {
    const unresolved: string[] = [];
    const visit = (node: unknown) => {
      if (!node || typeof node !== 'object') return;
      const ref = (node as { $ref?: unknown }).$ref;
      if (typeof ref === 'string') {
        const target = ref
          .slice(2)
          .split('/')
          .reduce<any>((at, segment) => at?.[segment.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
        if (!ref.startsWith('#/') || target === undefined) unresolved.push(ref);
      }
      for (const value of Object.values(node)) visit(value);
    };
    visit(doc);
    expect(unresolved).toEqual([]);
  });

  it('has every schema compile as strict JSON Schema 2020-12 (no unknown keywords)', () => {
    const ajv = schemaAjv();
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.compile({ $ref: `openapi#/components/schemas/${name}` })).not.toThrow();
    }
  });

  it('describes exactly the routes of config/layout.ts, with their authentication', () => {
    const documented = operations.map(([path, method, operation]) => ({
      route: `${method.toUpperCase()} ${path}`,
      security: operation.security.flatMap((requirement) => Object.keys(requirement)),
    }));
    const expected = allRoutes.map((route) => ({
      route: `${route.method} ${route.path}`,
      security: route.auth === 'tenant' ? ['apiKey'] : route.auth === 'admin' ? ['adminKey'] : [],
    }));
    const byRoute = (a: { route: string }, b: { route: string }) => a.route.localeCompare(b.route);
    expect(documented.sort(byRoute)).toEqual(expected.sort(byRoute));
  });

  it('gives every authenticated operation its 401, 403, 429 and 5XX problems, and every operation a success', () => {
    for (const [path, method, operation] of operations) {
      const statuses = Object.keys(operation.responses);
      expect({ operation: `${method} ${path}`, success: statuses.some((s) => s.startsWith('2')) }).toEqual({
        operation: `${method} ${path}`,
        success: true,
      });
      if (operation.security.length > 0) {
        expect({ operation: `${method} ${path}`, statuses }).toEqual({
          operation: `${method} ${path}`,
          statuses: expect.arrayContaining(['401', '403', '429', '5XX']),
        });
      }
    }
  });

  it('has unique operation ids', () => {
    const ids = operations.map(([, , operation]) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('lets each problem response carry only its status and codes of its own', () => {
    const ajv = schemaAjv();
    const validate = ajv.compile({
      $ref: 'openapi#/components/responses/NotResolvable/content/application~1problem+json/schema',
    });
    const problem = (code: string, status: number) => ({
      type: `urn:longhaul:problem:${code}`,
      title: 'Conflict',
      status,
      detail: 'x',
      code,
    });
    expect(validate(problem('job-not-in-review', 409))).toBe(true);
    expect(validate(problem('job-already-finished', 409))).toBe(true);
    expect(validate(problem('job-already-finished', 400))).toBe(false);
    expect(validate(problem('not-found', 409))).toBe(false);
    expect(validate({ ...problem('job-not-in-review', 409), stack: 'at x.ts:1' })).toBe(false);
    expect(doc.components.schemas.ProblemCode.enum).toEqual(PROBLEM_CODES);
  });

  it('accepts and refuses job requests as the zod schemas the handler validates with do', () => {
    const ajv = schemaAjv();
    const request = ajv.compile({ $ref: 'openapi#/components/schemas/CreateJobRequest' });
    const samples: [string, Record<string, unknown>][] = [
      ['image.generate', { prompt: 'a lighthouse' }],
      ['image.generate', { prompt: 'a lighthouse', width: 512, height: 2048 }],
      ['image.generate', { prompt: '' }],
      ['image.generate', { prompt: 'x', width: 4096 }],
      ['image.generate', { prompt: 'x', colour: 'red' }],
      ['image.generate', { prompt: 'x', sourceImageRef: 'upl_0123456789abcdefghijklmn' }],
      ['audio.transcribe', { audioUrl: 'https://example.com/a.mp3', language: 'pt-BR' }],
      ['audio.transcribe', { audioUrl: 'http://example.com/a.mp3' }],
      ['audio.transcribe', { audioRef: 'upl_0123456789abcdefghijklmn' }],
      [
        'audio.transcribe',
        { audioRef: 'upl_0123456789abcdefghijklmn', audioUrl: 'https://example.com/a.mp3' },
      ],
      ['audio.transcribe', {}],
      ['audio.transcribe', { audioUrl: 'https://example.com/a.mp3', language: 'english!' }],
    ];
    for (const [type, input] of samples) {
      const zod = jobTypeModule(type).input.safeParse(input).success;
      expect({ type, input, accepted: request({ type, input }) }).toEqual({ type, input, accepted: zod });
    }
    expect(request({ type: 'video.render', input: { prompt: 'x' } })).toBe(false);
    expect(request({ type: 'image.generate', input: { prompt: 'x' }, extra: 1 })).toBe(false);
  });

  it('accepts and refuses searches as config/search.ts does, but for the date order JSON Schema cannot say', () => {
    const ajv = schemaAjv();
    const request = ajv.compile({ $ref: 'openapi#/components/schemas/SearchRequest' });
    const item = 'job_abcdefghijklmnopqrstuvwxyz';
    const samples: Record<string, unknown>[] = [
      { query: 'grace' },
      { query: 'grace', limit: 50, filter: { itemIds: [item], dateFrom: '2026-01-01', labels: ['advent'] } },
      { query: '' },
      { query: 'x'.repeat(1001) },
      { query: 'grace', limit: 0 },
      { query: 'grace', limit: 51 },
      { query: 'grace', limit: 2.5 },
      { query: 'grace', page: 2 },
      { query: 'grace', filter: { speaker: 'x' } },
      { query: 'grace', filter: { dateFrom: '2026-02-30' } },
      { query: 'grace', filter: { dateTo: '1 March 2026' } },
      { query: 'grace', filter: { itemIds: ['job_x'] } },
      { query: 'grace', filter: { itemIds: [] } },
      { query: 'grace', filter: { labels: [' padded'] } },
      { query: 'grace', filter: { labels: Array.from({ length: 11 }, (_, i) => `l${i}`) } },
    ];
    for (const sample of samples) {
      const zod = searchRequest.safeParse(sample).success;
      expect({ sample, accepted: request(sample) }).toEqual({ sample, accepted: zod });
    }
    // The two refusals only the handler's schema can make: its descriptions say them.
    for (const refusedByHandlerOnly of [
      { query: 'grace', filter: { dateFrom: '2026-03-02', dateTo: '2026-03-01' } },
      { query: '   ' },
    ]) {
      expect({
        document: request(refusedByHandlerOnly),
        zod: searchRequest.safeParse(refusedByHandlerOnly).success,
      }).toEqual({ document: true, zod: false });
    }
    expect(doc.components.responses.SearchRefused.description).toContain('empty (or only white space)');
    expect(doc.components.schemas.SearchFilter.description).toContain(
      '`dateFrom` must not be after `dateTo`',
    );

    const result = ajv.compile({ $ref: 'openapi#/components/schemas/SearchResult' });
    const hit = {
      score: 0.83,
      item: { id: item, title: 'Advent 1', date: '2025-11-30', labels: ['advent'] },
      passage: { index: 3, start: 95.5, end: 131, text: 'Grace is not earned.' },
      playback: {
        playlistUrl: 'https://media.example.test/p/master.m3u8?X-Amz-Signature=abc',
        startSeconds: 95.5,
        url: 'https://media.example.test/p/master.m3u8?X-Amz-Signature=abc#t=95.5',
      },
    };
    for (const answer of [
      { items: [hit] },
      { items: [] },
      { items: [{ ...hit, tenantId: 'acme' }] },
      { items: [{ ...hit, item: { ...hit.item, tenantId: 'acme' } }] },
      { items: [hit], nextCursor: null },
    ]) {
      expect({ answer, valid: result(answer) }).toEqual({
        answer,
        valid: searchResult.safeParse(answer).success,
      });
    }
    expect(result({ items: [hit] })).toBe(true);
    expect(result({ items: [{ ...hit, tenantId: 'acme' }] })).toBe(false);
  });

  it('accepts and refuses media requests as config/media.ts does, but for a title of only white space', () => {
    const ajv = schemaAjv();
    const cases: [string, z.ZodType, Record<string, unknown>[]][] = [
      [
        'CreateMediaRequest',
        createMediaRequest,
        [
          { title: 'Advent 1' },
          { title: 'Advent 1', speaker: 'R. Hale', date: '2025-11-30', labels: ['advent', 'st-marks'] },
          {},
          { title: '' },
          { title: 'x'.repeat(201) },
          { title: 'Advent 1', date: '2025-11-31' },
          { title: 'Advent 1', labels: ['advent', 'advent'] },
          { title: 'Advent 1', labels: Array.from({ length: 11 }, (_, i) => `l${i}`) },
          { title: 'Advent 1', audioUrl: 'https://example.com/a.mp3' },
        ],
      ],
      [
        'UpdateMediaRequest',
        updateMediaRequest,
        [
          { title: 'Advent 2' },
          { speaker: null, date: null },
          { labels: [] },
          {},
          { labels: ['x', 'x'] },
          { speaker: '' },
          { enabled: true },
        ],
      ],
      [
        'CreateVersionRequest',
        createVersionRequest,
        [
          { audioUrl: 'https://example.com/a.mp3', language: 'en' },
          { audioRef: 'upl_0123456789abcdefghijklmn' },
          {},
          { audioUrl: 'https://example.com/a.mp3', audioRef: 'upl_0123456789abcdefghijklmn' },
          { audioUrl: 'http://example.com/a.mp3' },
          { audioRef: 'upl_0123456789abcdefghijklmn', title: 'x' },
        ],
      ],
    ];
    for (const [name, schema, samples] of cases) {
      const document = ajv.compile({ $ref: `openapi#/components/schemas/${name}` });
      for (const sample of samples) {
        expect({ name, sample, accepted: document(sample) }).toEqual({
          name,
          sample,
          accepted: schema.safeParse(sample).success,
        });
      }
    }
    const create = ajv.compile({ $ref: 'openapi#/components/schemas/CreateMediaRequest' });
    expect({
      document: create({ title: '   ' }),
      zod: createMediaRequest.safeParse({ title: '   ' }).success,
    }).toEqual({ document: true, zod: false });
    expect(doc.components.responses.CreateMediaRefused.description).toContain('empty or only white space');
  });

  it("describes GET /v1/media's query as config/media.ts does, one parameter per field", () => {
    const parameters = doc.paths['/v1/media'].get.parameters as { name: string; in: string }[];
    expect(parameters.map((parameter) => [parameter.name, parameter.in])).toEqual(
      Object.keys(listMediaQuery.shape).map((name) => [name, 'query']),
    );
  });

  it('accepts the media item answers config/media.ts accepts, and nothing more', () => {
    const ajv = schemaAjv();
    const item = ajv.compile({ $ref: 'openapi#/components/schemas/MediaItem' });
    const version = {
      number: 2,
      jobId: 'job_abcdefghijklmnopqrstuvwxyz',
      status: 'published',
      createdAt: '2026-03-01T09:00:00.000Z',
      publishedAt: '2026-03-01T09:05:00.000Z',
      durationSeconds: 1834.2,
      playlistUrl: 'https://media.example.test/p/master.m3u8?X-Amz-Signature=abc',
      passages: 41,
      searchable: true,
    };
    const answer = {
      id: 'med_abcdefghijklmnopqrstuvwxyz',
      title: 'Advent 1',
      labels: ['advent'],
      createdAt: '2026-03-01T08:00:00.000Z',
      updatedAt: '2026-03-01T09:05:00.000Z',
      current: version,
      inProgress: { ...version, number: 3, status: 'publishing', publishedAt: undefined },
    };
    const samples = [
      answer,
      { ...answer, current: undefined, inProgress: undefined },
      { ...answer, tenantId: 'acme' },
      { ...answer, current: { ...version, status: 'current' } },
      { ...answer, id: 'job_abcdefghijklmnopqrstuvwxyz' },
    ].map((sample) => JSON.parse(JSON.stringify(sample)));
    for (const sample of samples) {
      expect({ sample, valid: item(sample) }).toEqual({
        sample,
        valid: mediaItemView.safeParse(sample).success,
      });
    }
    expect(item(samples[0])).toBe(true);
    expect(item(samples[2])).toBe(false);
  });
});
