import { adminDocument as adminDocumentOf, publicDocument as publicDocumentOf } from '../http/api-reference.ts';
import { openApiFileTexts } from '../http/write-openapi.ts';
import { VERSION } from '../core/version.ts';
import { adminRoutes, publicRouteDefinitions } from './areas.ts';

/** The public listener's OpenAPI document: every area's routes (areas.ts). */
export const publicDocument = (version: string) => publicDocumentOf(publicRouteDefinitions(), version);

/** The admin listener's OpenAPI document: the admin routes with every area's ingest kinds. */
export const adminDocument = (version: string) => adminDocumentOf(adminRoutes(), version);

/** docs/openapi's files as this version of the code generates them (`npm run openapi` writes them). */
export const openApiFiles = () => openApiFileTexts({ public: publicDocument(VERSION), admin: adminDocument(VERSION) });
