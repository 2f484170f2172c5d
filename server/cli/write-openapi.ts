// `npm run openapi`: writes the public and admin OpenAPI documents of the
// wired routes to docs/openapi/, where they are committed.
import { writeOpenApiFiles } from '../http/write-openapi.ts';
import { openApiFiles } from '../wiring/api-documents.ts';

await writeOpenApiFiles(openApiFiles());
