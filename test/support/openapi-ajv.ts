import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * An ajv that compiles the schemas inside an OpenAPI document strictly: the
 * document is added whole as `openapi`, so `{ $ref: 'openapi#<pointer>' }`
 * compiles the schema at that pointer with its `#/components/...` references
 * resolved.
 */
export function openApiSchemaAjv(document: object): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
  });
  addFormats(ajv);
  // The document's own members are not schema keywords; the schemas inside it are checked strictly.
  ajv.addVocabulary([
    'openapi',
    'info',
    'jsonSchemaDialect',
    'servers',
    'tags',
    'paths',
    'webhooks',
    'x-job-types',
    'components',
  ]);
  ajv.addSchema(document, 'openapi');
  return ajv;
}
