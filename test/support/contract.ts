import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { adminDocument, publicDocument } from '../../server/wiring/api-documents.ts';
import { bySpecificity } from '../../server/http/router.ts';
import { VERSION } from '../../server/core/version.ts';

// ajv-formats is CommonJS: its plugin is module.exports and, for ES modules, its default.
const addFormats = addFormatsModule.default;

interface Operation {
  documentId: string;
  template: string;
  method: string;
  pattern: RegExp;
  statuses: Set<string>;
}

/**
 * The OpenAPI documents as a contract for real answers: `check` validates a
 * response's status and body against the document's schema for its route,
 * method and status, with ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1).
 */
class Contract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();

  private readonly documents: Record<string, ReturnType<typeof publicDocument>>;

  constructor(documents: Record<string, ReturnType<typeof publicDocument>>) {
    this.documents = documents;
    addFormats(this.ajv);
    for (const [documentId, document] of Object.entries(documents)) {
      this.ajv.addSchema(document as object, documentId);
      for (const [template, item] of Object.entries(document.paths ?? {})) {
        for (const method of ['get', 'post', 'put', 'patch', 'delete'] as const) {
          const op = (item as Record<string, { responses?: Record<string, unknown> }>)[method];
          if (!op) continue;
          const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
          this.operations.push({ documentId, template, method: method.toUpperCase(), pattern, statuses: new Set(Object.keys(op.responses ?? {})) });
        }
      }
    }
    // Most specific first, as the router matches.
    const express = (t: string) => t.replace(/\{([^}]+)\}/g, ':$1');
    this.operations.sort((a, b) => bySpecificity(express(a.template), express(b.template)));
  }

  /** The documented operation serving `method path`, if any. */
  operationOf(method: string, path: string): Operation | undefined {
    return this.operations.find((o) => o.method === method.toUpperCase() && o.pattern.test(path));
  }

  /**
   * Throws, naming the route and the differences, when a JSON answer of a
   * documented operation is not one the document allows. Answers on paths
   * the document does not describe (/healthz, /metrics, unknown routes) are
   * not its business and pass.
   */
  check(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
    const path = url.replace(/^[a-z]+:\/\/[^/]+/i, '').split(/[?#]/)[0];
    const op = this.operationOf(method, path);
    if (!op) return;
    const where = `${method.toUpperCase()} ${path} (${op.template}) answered ${status}`;
    if (!op.statuses.has(String(status)))
      throw new Error(`${where}, a status the OpenAPI document does not list for it (it lists ${[...op.statuses].join(', ')})`);
    if (status === 304) {
      if (body !== '') throw new Error(`${where} with a body`);
      return;
    }
    if (contentType?.startsWith('text/csv') && this.documentsContent(op, String(status), 'text/csv')) {
      if (typeof body !== 'string') throw new Error(`${where} with a CSV body that is not text`);
      return;
    }
    const binary = ['application/vnd.apache.arrow.stream', 'application/vnd.apache.parquet'].find((type) => contentType?.startsWith(type));
    if (binary) {
      if (!this.documentsContent(op, String(status), binary)) throw new Error(`${where} with content type ${contentType}, which it does not document`);
      if (!Buffer.isBuffer(body)) throw new Error(`${where} with a ${binary} body read as text`);
      return;
    }
    if (!contentType?.startsWith('application/json')) throw new Error(`${where} with content type ${contentType}, not application/json`);
    const validate = this.validatorFor(op, String(status));
    if (!validate(body)) {
      const problems = (validate.errors ?? [])
        .slice(0, 10)
        .map((e) => `${e.instancePath || '/'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
      throw new Error(`${where} with a body the OpenAPI document does not allow:\n  ${problems.join('\n  ')}`);
    }
  }

  private documentsContent(op: Operation, status: string, type: string): boolean {
    const responses = (this.documents[op.documentId].paths as Record<string, Record<string, { responses: Record<string, { content?: object }> }>>)[op.template][
      op.method.toLowerCase()
    ].responses;
    return Object.hasOwn(responses[status]?.content ?? {}, type);
  }

  private validatorFor(op: Operation, status: string): ValidateFunction {
    const key = `${op.documentId} ${op.method} ${op.template} ${status}`;
    let validate = this.validators.get(key);
    if (!validate) {
      const pointer = ['paths', op.template, op.method.toLowerCase(), 'responses', status, 'content', 'application/json', 'schema']
        .map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1')))
        .join('/');
      validate = this.ajv.getSchema(`${op.documentId}#/${pointer}`);
      if (!validate) throw new Error(`no schema at ${key}`);
      this.validators.set(key, validate);
    }
    return validate;
  }
}

let contract: Contract | null = null;

/** The contract of both listeners' documents, as the code generates them. */
export function apiContract(): Contract {
  contract ??= new Contract({ public: publicDocument(VERSION), admin: adminDocument(VERSION) });
  return contract;
}
