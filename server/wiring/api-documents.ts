import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { adminDocument as adminDocumentOf, publicDocument as publicDocumentOf } from '../http/api-reference.ts';
import type { OperationExamples } from '../http/openapi.ts';
import { OPENAPI_DIR, openApiFileTexts } from '../http/write-openapi.ts';
import { VERSION } from '../core/version.ts';
import { adminRoutes, publicRouteDefinitions } from './areas.ts';

/**
 * The public operations' examples: the demo data set's parameters and bodies
 * (server/demo/api-examples.ts) and the service's answers to them, written
 * by `npm run openapi:examples` (server/cli/write-openapi-examples.ts).
 */
export const EXAMPLES_FILE = path.join(OPENAPI_DIR, 'examples.json');

const ValueSchema = z.union([z.string(), z.number()]);
const ByOperation = <T extends z.ZodType>(value: T) => z.record(z.string(), value);

export const ExamplesFileSchema = z.strictObject({
  about: z.string(),
  parameters: ByOperation(z.record(z.string(), ValueSchema)),
  alternatives: ByOperation(z.record(z.string(), ValueSchema)),
  bodies: ByOperation(z.unknown()),
  answers: ByOperation(z.strictObject({ request: z.string(), status: z.int(), trimmed: z.array(z.string()), body: z.unknown() })),
});

export type ExamplesFile = z.infer<typeof ExamplesFileSchema>;

/** docs/openapi/examples.json as committed; none before the examples script has first written it. */
export function committedExamples(): OperationExamples | undefined {
  if (!existsSync(EXAMPLES_FILE)) return undefined;
  return ExamplesFileSchema.parse(JSON.parse(readFileSync(EXAMPLES_FILE, 'utf8')));
}

/** The public listener's OpenAPI document: every area's routes (areas.ts), with the committed examples. */
export const publicDocument = (version: string) => publicDocumentOf(publicRouteDefinitions(), version, committedExamples());

/** The admin listener's OpenAPI document: the admin routes with every area's ingest kinds. */
export const adminDocument = (version: string) => adminDocumentOf(adminRoutes(), version);

/** docs/openapi's files as this version of the code generates them (`npm run openapi` writes them). */
export const openApiFiles = () => openApiFileTexts({ public: publicDocument(VERSION), admin: adminDocument(VERSION) });
