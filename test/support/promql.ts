/**
 * The names a PromQL expression refers to: each selector's metric and the
 * labels its matchers name, and the labels of its `by`, `without`, `on`,
 * `ignoring` and `group_*` clauses. A tokenizer, not a parser: enough to hold
 * the dashboard's and the alert rules' expressions to what /metrics exposes.
 * promtool checks their syntax in .ci/run.
 */
export interface Selector {
  metric: string;
  labels: string[];
}

export interface ExpressionNames {
  selectors: Selector[];
  groupingLabels: string[];
}

const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan', 'atan2']);

type Token = { kind: 'ident' | 'string' | 'other'; text: string };

// Order matters: a comment or a string before anything inside it.
const TOKEN =
  /\s+|#[^\n]*|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`|\$\{[^}]*\}|\$\w+|[a-zA-Z_:][a-zA-Z0-9_:]*|[0-9.][0-9a-zA-Z.]*|=~|!~|!=|==|<=|>=|[-+*/%^@=<>(){}[\],]/y;

function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < expr.length) {
    const at = TOKEN.lastIndex;
    const match = TOKEN.exec(expr);
    if (!match) throw new Error(`cannot read the PromQL at offset ${at}: ${expr.slice(at, at + 20)}`);
    const text = match[0];
    if (/^\s/.test(text) || text.startsWith('#')) continue;
    const kind = /^["'`]/.test(text) ? 'string' : /^[a-zA-Z_:]/.test(text) ? 'ident' : 'other';
    tokens.push({ kind, text });
  }
  return tokens;
}

export function namesIn(expr: string): ExpressionNames {
  const tokens = tokenize(expr);
  const selectors: Selector[] = [];
  const groupingLabels: string[] = [];
  const text = (i: number) => tokens[i]?.text;

  /** The label names of the matchers from the `{` at `open`; returns the index after `}`. */
  const matchers = (open: number, labels: string[]): number => {
    let i = open + 1;
    for (; i < tokens.length && text(i) !== '}'; i++) {
      if (tokens[i].kind === 'ident' && ['=', '!=', '=~', '!~'].includes(text(i + 1) ?? '')) labels.push(tokens[i].text);
    }
    return i + 1;
  };

  for (let i = 0; i < tokens.length;) {
    const token = tokens[i];
    if (token.text === '[') {
      // A range or subquery duration (or a dashboard variable standing for one).
      while (i < tokens.length && text(i) !== ']') i++;
      i++;
      continue;
    }
    if (token.text === '{') {
      throw new Error(`a selector without a metric name is not checked: ${expr}`);
    }
    if (token.kind !== 'ident') {
      i++;
      continue;
    }
    const word = token.text.toLowerCase();
    const next = text(i + 1);
    if (GROUPING.has(word) && next === '(') {
      for (i += 2; i < tokens.length && text(i) !== ')'; i++) {
        if (tokens[i].kind === 'ident') groupingLabels.push(tokens[i].text);
      }
      i++;
      continue;
    }
    if (KEYWORDS.has(word) || next === '(' || (AGGREGATIONS.has(word) && (next === 'by' || next === 'without'))) {
      i++;
      continue;
    }
    const labels: string[] = [];
    i = next === '{' ? matchers(i + 1, labels) : i + 1;
    selectors.push({ metric: token.text, labels });
  }
  return { selectors, groupingLabels };
}
