import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../server/config.ts';
import { VERSION } from '../../server/core/version.ts';
import { CLIENT_ERRORS } from '../../server/runtime/listener.ts';
import { adminDocument, publicDocument } from '../../server/wiring/api-documents.ts';

// docs/api.md's error table against the codes the API declares: every error
// answer of every operation of both documents, each with its status, and the
// codes the listener answers before any route (Node's own refusals).

interface ErrorAnswer {
  content?: { 'application/json'?: { schema?: { properties?: { error?: { properties?: { code?: { enum?: string[] } } } } } } };
}

/** Each code the documents' operations answer, with its statuses and the operations that answer it. */
function declaredCodes(): Map<string, { statuses: Set<number>; operations: string[] }> {
  const codes = new Map<string, { statuses: Set<number>; operations: string[] }>();
  for (const document of [publicDocument(VERSION), adminDocument(VERSION)]) {
    for (const [template, item] of Object.entries(document.paths ?? {})) {
      for (const [method, operation] of Object.entries(item as Record<string, { responses: Record<string, ErrorAnswer> }>)) {
        for (const [status, answer] of Object.entries(operation.responses)) {
          for (const code of answer.content?.['application/json']?.schema?.properties?.error?.properties?.code?.enum ?? []) {
            const entry = codes.get(code) ?? { statuses: new Set(), operations: [] };
            entry.statuses.add(Number(status));
            entry.operations.push(`${method.toUpperCase()} ${template}`);
            codes.set(code, entry);
          }
        }
      }
    }
  }
  for (const { status, error } of Object.values(CLIENT_ERRORS)) {
    const entry = codes.get(error().code) ?? { statuses: new Set(), operations: [] };
    entry.statuses.add(status);
    entry.operations.push('the listener, before any route');
    codes.set(error().code, entry);
  }
  return codes;
}

/** The rows of the table under docs/api.md's "## Errors": code, status and what the row says. */
function tableRows(): { code: string; status: number; when: string }[] {
  const text = readFileSync(path.join(PROJECT_ROOT, 'docs/api.md'), 'utf8');
  const section = text.slice(text.indexOf('\n## Errors\n'), text.indexOf('\n## ', text.indexOf('\n## Errors\n') + 1));
  return [...section.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| (.*) \|$/gm)].map(([, code, status, when]) => ({ code, status: Number(status), when }));
}

describe("docs/api.md's error table", () => {
  const declared = declaredCodes();
  const rows = tableRows();

  it('when the table is read, then it has one row per code, and the documents declare codes at all', () => {
    expect(rows.length).toBeGreaterThan(10);
    expect(new Set(rows.map((r) => r.code)).size).toBe(rows.length);
    expect(declared.size).toBeGreaterThan(10);
  });

  it('when a route (or the listener) can answer a code, then the table lists it with the status it is answered with', () => {
    const listed = new Map(rows.map((r) => [r.code, r.status]));
    const missing = [...declared.keys()].filter((code) => !listed.has(code));
    expect(missing, 'codes a route answers that the table leaves out').toEqual([]);
    for (const [code, { statuses }] of declared) expect([...statuses], code).toEqual([listed.get(code)]);
  });

  it('when the table lists a code, then some route (or the listener) answers it, and the row does not say that none does', () => {
    const unanswered = rows.filter((r) => !declared.has(r.code)).map((r) => r.code);
    expect(unanswered, 'rows for codes no route answers').toEqual([]);
    for (const row of rows) expect(row.when, row.code).not.toMatch(/\breserved\b|no route (served yet )?returns it/i);
  });
});
