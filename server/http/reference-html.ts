// The public OpenAPI document as plain HTML: /docs shows it inside
// <noscript>, so a browser without scripts (or a fetch, a screenshot, a text
// browser) reads every operation, its parameters and its answers, from the
// same document Swagger UI renders when scripts run.

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  example?: unknown;
  schema?: { type?: unknown; enum?: unknown[]; default?: unknown; examples?: unknown[] };
}

interface Operation {
  operationId: string;
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { example?: unknown }> };
  responses?: Record<string, { description?: string; content?: Record<string, unknown> }>;
}

/** What of the document the page shows; each path item is read as its operations by method (Operation, the fields shown). */
export interface ReferenceDocument {
  info: { title: string; description?: string };
  tags?: { name: string; description?: string }[];
  paths?: Record<string, object>;
}

/** Text for HTML content and attribute values: every character that could end either (the dashboard's pages use it too). */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Plain text with Markdown's inline code spans (`Retry-After`) as HTML: escaped, each span a <code>. */
export const inlineCodeHtml = (s: string) => escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>');

/** One line of Markdown's inline forms the documents use: code spans, **bold** and [links](/path). */
const inlineHtml = (s: string) =>
  inlineCodeHtml(s)
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_m, text: string, href: string) => `<a href="${href}">${text}</a>`);

/** Markdown paragraphs and `- ` lists as HTML. */
function blocksHtml(markdown: string): string {
  return markdown
    .split(/\n{2,}/)
    .map((block) => {
      const lines = block.split('\n');
      if (lines.every((l) => l.startsWith('- '))) return `<ul>${lines.map((l) => `<li>${inlineHtml(l.slice(2))}</li>`).join('')}</ul>`;
      return `<p>${inlineHtml(block)}</p>`;
    })
    .join('\n');
}

const valueText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
const cell = (value: unknown) => (value === undefined ? '' : `<code>${escapeHtml(valueText(value))}</code>`);

function parameterRow(p: Parameter): string {
  const kind = [p.in, p.required ? 'required' : 'optional', ...(p.schema?.enum ? [`one of ${p.schema.enum.map(valueText).join(', ')}`] : [])].join(', ');
  const alternative = p.schema?.examples?.[0];
  const example = p.example !== undefined ? cell(p.example) : alternative !== undefined ? `${cell(alternative)} (instead of another parameter)` : '';
  return `<tr><td><code>${escapeHtml(p.name)}</code><br><small>${escapeHtml(kind)}</small></td><td>${inlineCodeHtml(p.description ?? '')}</td><td>${cell(p.schema?.default)}</td><td>${example}</td></tr>`;
}

/** The request the operation's examples make, with `{name}` left where a path parameter has none. */
function exampleRequest(method: string, template: string, parameters: Parameter[]): string {
  let target = template;
  const query = new URLSearchParams();
  for (const p of parameters) {
    if (p.example === undefined) continue;
    if (p.in === 'path') target = target.replace(`{${p.name}}`, encodeURIComponent(valueText(p.example)));
    else query.set(p.name, valueText(p.example));
  }
  return `${method.toUpperCase()} ${target}${query.size ? `?${decodeURIComponent(query.toString())}` : ''}`;
}

/** An error answer's description lists its codes: each links to its row in the error table. */
function answerHtml(status: string, answer: { description?: string; content?: Record<string, unknown> }, errorCodes: ReadonlySet<string>): string {
  const description = answer.description ?? '';
  const codes = description.split(', ');
  const text = codes.every((c) => errorCodes.has(c)) ? codes.map((c) => `<a href="#${c}"><code>${c}</code></a>`).join(', ') : inlineCodeHtml(description);
  const types = Object.keys(answer.content ?? {});
  return `<li><code>${status}</code> ${text}${types.length ? ` <small>(${types.map(escapeHtml).join(', ')})</small>` : ''}</li>`;
}

function operationHtml(method: string, template: string, op: Operation, errorCodes: ReadonlySet<string>): string {
  const parameters = op.parameters ?? [];
  const scopes = (op.security ?? []).flatMap((s) => Object.values(s).flat());
  const body = op.requestBody?.content?.['application/json']?.example;
  return `<article class="operation" id="operation-${escapeHtml(op.operationId)}">
<h4><code>${method.toUpperCase()} ${escapeHtml(template)}</code> ${escapeHtml(op.summary ?? '')}</h4>
<p>${inlineCodeHtml(op.description ?? '')}</p>
${scopes.length ? `<p>Scope: ${scopes.map((s) => `<code>${escapeHtml(s)}</code>`).join(', ')}</p>` : ''}
${
  parameters.length
    ? `<table><thead><tr><th>parameter</th><th>description</th><th>default</th><th>example</th></tr></thead><tbody>
${parameters.map(parameterRow).join('\n')}
</tbody></table>`
    : ''
}
${body !== undefined ? `<p>Example body:</p><pre>${escapeHtml(JSON.stringify(body, null, 2))}</pre>` : ''}
<p>Example request: <code>${escapeHtml(exampleRequest(method, template, parameters))}</code></p>
<ul class="answers">${Object.entries(op.responses ?? {})
    .map(([status, answer]) => answerHtml(status, answer, errorCodes))
    .join('')}</ul>
</article>`;
}

/**
 * The document's description, then every operation under its tag, in the
 * document's tag order: method and path, summary and description, scope,
 * each parameter with its description, default and example, the example
 * request, and each answer's status and description (an error answer's
 * codes link to `errorCodes`' rows, anchored by code on the same page).
 */
export function referenceHtml(document: ReferenceDocument, errorCodes: ReadonlySet<string>): string {
  const operations = Object.entries(document.paths ?? {}).flatMap(([template, item]) =>
    Object.entries(item as Record<string, Operation>).map(([method, op]) => ({ method, template, op })),
  );
  const tags = (document.tags ?? []).map(
    (tag) => `<section class="tag">
<h3>${escapeHtml(tag.name)}</h3>
<p>${inlineCodeHtml(tag.description ?? '')}</p>
${operations
  .filter(({ op }) => op.tags?.[0] === tag.name)
  .map(({ method, template, op }) => operationHtml(method, template, op, errorCodes))
  .join('\n')}
</section>`,
  );
  return `<section id="reference">
<h2>${escapeHtml(document.info.title)}</h2>
${blocksHtml(document.info.description ?? '')}
${tags.join('\n')}
</section>`;
}
